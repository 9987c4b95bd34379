-- Drives CodeCompanion's chat with air as its ACP agent, as a person would: a chat
-- opened, a message sent; waits for the answer NV_EXPECT, writes the chat buffer to
-- NV_OUT, and quits (exit 1 when the answer never came).
local out, prompt, expect = os.getenv("NV_OUT"), os.getenv("NV_PROMPT"), os.getenv("NV_EXPECT")
vim.schedule(function()
  local chat = require("codecompanion").chat()
  -- A person types after the chat has connected to its agent.
  vim.wait(60000, function()
    return chat.acp_connection ~= nil and chat.acp_connection:is_ready()
  end, 100)
  chat:add_buf_message({ role = "user", content = prompt })
  chat:submit()
  local ok = vim.wait(120000, function()
    local text = table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n")
    return text:find(expect, 1, true) ~= nil
  end, 100)
  local f = io.open(out, "w")
  f:write(table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n"))
  f:close()
  vim.cmd(ok and "qa!" or "cq!")
end)
