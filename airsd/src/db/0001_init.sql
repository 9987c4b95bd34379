-- Session database, schema v1 (D-051, D-052, baseline §13).
-- Domain tables are the source of truth; `events` is the durable log beside them.
-- Every row a durable event creates carries `seq`, the event's sequence number.

CREATE TABLE session_meta (
    id          TEXT PRIMARY KEY,
    project_id  TEXT,
    title       TEXT,
    plan_ref    TEXT,
    status      TEXT NOT NULL CHECK (status IN ('active', 'archived', 'deleted')),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE events (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,
    version         INTEGER NOT NULL,
    timestamp       TEXT NOT NULL,
    source_kind     TEXT NOT NULL,
    source_id       TEXT,
    source_agent_type TEXT,
    task_id         TEXT,
    agent_id        TEXT,
    tool_run_id     TEXT,
    command_run_id  TEXT,
    route_json      TEXT NOT NULL,
    route_text      TEXT NOT NULL,
    payload_json    TEXT NOT NULL
);
CREATE INDEX events_type ON events (type, seq);
CREATE INDEX events_task ON events (task_id, seq) WHERE task_id IS NOT NULL;
CREATE INDEX events_agent ON events (agent_id, seq) WHERE agent_id IS NOT NULL;

CREATE TABLE messages (
    id              TEXT PRIMARY KEY,
    seq             INTEGER NOT NULL,
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    agent_id        TEXT,
    task_id         TEXT,
    model           TEXT,
    content_json    TEXT NOT NULL,
    input_tokens    INTEGER NOT NULL DEFAULT 0,
    output_tokens   INTEGER NOT NULL DEFAULT 0,
    usage_json      TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX messages_seq ON messages (seq);

-- Streaming assistant state for crash recovery; deleted when the message completes.
CREATE TABLE message_drafts (
    message_id      TEXT PRIMARY KEY,
    agent_id        TEXT,
    task_id         TEXT,
    content_json    TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);

CREATE TABLE tasks (
    id              TEXT PRIMARY KEY,
    seq             INTEGER NOT NULL,
    title           TEXT NOT NULL,
    type            TEXT NOT NULL,
    category        TEXT,
    phase           TEXT,
    write_area      TEXT,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'ready', 'running', 'reviewing',
                        'debugging', 'completed', 'failed', 'blocked', 'cancelled')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    agent_id        TEXT,
    reason          TEXT,
    spec_json       TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX tasks_seq ON tasks (seq);

CREATE TABLE task_dependencies (
    task_id             TEXT NOT NULL REFERENCES tasks (id),
    depends_on_task_id  TEXT NOT NULL REFERENCES tasks (id) DEFERRABLE INITIALLY DEFERRED,
    dependency_type     TEXT NOT NULL CHECK (dependency_type IN ('hard', 'soft', 'conflict', 'serialization')),
    reason              TEXT,
    source              TEXT,
    PRIMARY KEY (task_id, depends_on_task_id, dependency_type)
);
CREATE INDEX task_dependencies_target ON task_dependencies (depends_on_task_id);

CREATE TABLE task_attempts (
    task_id     TEXT NOT NULL REFERENCES tasks (id),
    attempt     INTEGER NOT NULL,
    agent_id    TEXT,
    agent_type  TEXT,
    status      TEXT NOT NULL,
    reason      TEXT,
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    PRIMARY KEY (task_id, attempt)
);

CREATE TABLE agents (
    id          TEXT PRIMARY KEY,
    seq         INTEGER NOT NULL,
    agent_type  TEXT NOT NULL,
    task_id     TEXT REFERENCES tasks (id),
    status      TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
    model       TEXT,
    pid         INTEGER,
    exit_code   INTEGER,
    reason      TEXT,
    result_json TEXT,
    started_at  TEXT NOT NULL,
    ended_at    TEXT
);
CREATE INDEX agents_seq ON agents (seq);

CREATE TABLE tool_runs (
    id                  TEXT PRIMARY KEY,
    seq                 INTEGER NOT NULL,
    tool                TEXT NOT NULL,
    agent_id            TEXT,
    task_id             TEXT,
    origin_message_id   TEXT,
    status              TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
    input_json          TEXT NOT NULL,
    output_json         TEXT,
    error               TEXT,
    started_at          TEXT NOT NULL,
    ended_at            TEXT,
    duration_ms         INTEGER
);
CREATE INDEX tool_runs_seq ON tool_runs (seq);

CREATE TABLE command_runs (
    id                  TEXT PRIMARY KEY,
    seq                 INTEGER NOT NULL,
    tool_run_id         TEXT REFERENCES tool_runs (id),
    agent_id            TEXT,
    task_id             TEXT,
    origin_message_id   TEXT,
    command             TEXT NOT NULL,
    cwd                 TEXT,
    status              TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
    exit_code           INTEGER,
    error               TEXT,
    started_at          TEXT NOT NULL,
    ended_at            TEXT,
    duration_ms         INTEGER
);
CREATE INDEX command_runs_seq ON command_runs (seq);

CREATE TABLE artifacts (
    id              TEXT PRIMARY KEY,
    seq             INTEGER NOT NULL,
    type            TEXT NOT NULL,
    uri             TEXT NOT NULL,
    path            TEXT,
    original_name   TEXT,
    size_bytes      INTEGER,
    sha256          TEXT,
    task_id         TEXT REFERENCES tasks (id),
    agent_id        TEXT REFERENCES agents (id),
    tool_run_id     TEXT REFERENCES tool_runs (id),
    command_run_id  TEXT REFERENCES command_runs (id),
    entity_type     TEXT,
    entity_id       TEXT,
    created_at      TEXT NOT NULL
);

CREATE TABLE diagnostics (
    id              TEXT PRIMARY KEY,
    seq             INTEGER NOT NULL,
    severity        TEXT NOT NULL,
    message         TEXT NOT NULL,
    file            TEXT,
    line            INTEGER,
    column_number   INTEGER,
    code            TEXT,
    signature       TEXT,
    source_tool     TEXT,
    command_run_id  TEXT,
    task_id         TEXT,
    agent_id        TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX diagnostics_signature ON diagnostics (signature) WHERE signature IS NOT NULL;

CREATE TABLE evidence_refs (
    id              TEXT PRIMARY KEY,
    seq             INTEGER NOT NULL,
    kind            TEXT NOT NULL,
    ref             TEXT NOT NULL,
    evidence_type   TEXT,
    claim           TEXT NOT NULL,
    location_json   TEXT,
    task_id         TEXT,
    agent_id        TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX evidence_refs_task ON evidence_refs (task_id) WHERE task_id IS NOT NULL;

CREATE TABLE workspaces (
    id          TEXT PRIMARY KEY,
    seq         INTEGER NOT NULL,
    path        TEXT NOT NULL,
    task_id     TEXT,
    branch      TEXT,
    base_ref    TEXT,
    status      TEXT NOT NULL CHECK (status IN ('active', 'merged', 'removed')),
    reason      TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE permission_requests (
    id              TEXT PRIMARY KEY,
    seq             INTEGER NOT NULL,
    action          TEXT NOT NULL,
    tool            TEXT,
    tool_run_id     TEXT,
    agent_id        TEXT,
    task_id         TEXT,
    risk            TEXT,
    reason          TEXT,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'decided')),
    decision        TEXT,
    decided_by      TEXT,
    decision_reason TEXT,
    requested_at    TEXT NOT NULL,
    decided_at      TEXT
);
CREATE INDEX permission_requests_pending ON permission_requests (seq) WHERE status = 'pending';

-- Lightweight UI recovery state only (D-053), flushed by clients through the API.
CREATE TABLE ui_state (
    key         TEXT PRIMARY KEY,
    value_json  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
