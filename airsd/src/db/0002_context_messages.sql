-- Session database, schema v2: what each agent's loop gave its model besides the
-- user's and assistants' messages (tool results, notes, the reminders of the loop),
-- recorded by `context.message.created`, kept as rows so that an agent's conversation
-- is read back (compaction, resuming) without parsing the event log (D-052).

CREATE TABLE context_messages (
    id              TEXT NOT NULL PRIMARY KEY,
    seq             INTEGER NOT NULL,
    agent_id        TEXT,
    task_id         TEXT,
    content_json    TEXT NOT NULL,
    created_at      TEXT NOT NULL
);
CREATE INDEX context_messages_agent ON context_messages (agent_id, seq)
    WHERE agent_id IS NOT NULL;

-- The messages of a v1 session, from its events.
INSERT INTO context_messages (id, seq, agent_id, task_id, content_json, created_at)
SELECT json_extract(payload_json, '$.message_id'), seq, agent_id, task_id,
       payload_json -> '$.content', timestamp
FROM events WHERE type = 'context.message.created' ORDER BY seq;
