-- mblast knowledge base, schema version 1.
-- Rows that travel between machines (export, import, merge) are identified by content: states and
-- techniques by their slug, everything else by the SHA-256 of its canonical JSON content, so that
-- the same fact recorded twice is one row.

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- Performance states form a tree (launch-bound -> launch-bound/many-small-kernels, ...).
-- `conditions` is a JSON array of {"metric", "op", "value"} rules over a profile signature.
CREATE TABLE states (
  id          TEXT PRIMARY KEY,
  parent_id   TEXT REFERENCES states (id),
  name        TEXT NOT NULL,
  description TEXT NOT NULL,
  conditions  TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(conditions)),
  origin      TEXT NOT NULL DEFAULT 'seed' CHECK (origin IN ('seed', 'critic', 'user')),
  created_at  TEXT NOT NULL
);

-- `backends` and `states` are JSON arrays; `builtin` is {"transform", "requires"} for built-ins.
CREATE TABLE techniques (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  description TEXT NOT NULL,
  backends    TEXT NOT NULL CHECK (json_valid(backends)),
  implementer TEXT NOT NULL CHECK (implementer IN ('llm', 'builtin')),
  states      TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(states)),
  builtin     TEXT CHECK (builtin IS NULL OR json_valid(builtin)),
  deprecated  INTEGER NOT NULL DEFAULT 0,
  origin      TEXT NOT NULL DEFAULT 'seed' CHECK (origin IN ('seed', 'critic', 'user')),
  created_at  TEXT NOT NULL
);

CREATE TABLE runs (
  id           TEXT PRIMARY KEY,
  task         TEXT NOT NULL,
  backend      TEXT NOT NULL,
  hardware     TEXT NOT NULL,
  status       TEXT NOT NULL DEFAULT 'running',
  config       TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(config)),
  budgets      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(budgets)),
  tokens_in    INTEGER NOT NULL DEFAULT 0,
  tokens_out   INTEGER NOT NULL DEFAULT 0,
  cost_usd     REAL NOT NULL DEFAULT 0,
  best_speedup REAL,
  started_at   TEXT NOT NULL,
  finished_at  TEXT
);

CREATE TABLE attempts (
  id             TEXT PRIMARY KEY,
  run_id         TEXT REFERENCES runs (id),
  task           TEXT NOT NULL,
  slot           TEXT NOT NULL DEFAULT 'model',
  state_id       TEXT REFERENCES states (id),
  technique_id   TEXT REFERENCES techniques (id),
  backend        TEXT NOT NULL,
  hardware       TEXT NOT NULL,
  iteration      INTEGER,
  step           INTEGER,
  candidate_hash TEXT,
  outcome        TEXT NOT NULL CHECK (outcome IN ('correct', 'incorrect', 'compile_error',
                                                  'runtime_error', 'timeout', 'cheat', 'skipped')),
  error          TEXT,
  time_ms        REAL,
  baseline_ms    REAL,
  speedup        REAL,
  reward         REAL,
  tokens         INTEGER NOT NULL DEFAULT 0,
  created_at     TEXT NOT NULL
);
CREATE INDEX attempts_by_arm ON attempts (state_id, technique_id, backend);
CREATE INDEX attempts_by_task ON attempts (task, created_at);
CREATE INDEX attempts_by_run ON attempts (run_id);

CREATE TABLE implementations (
  id             TEXT PRIMARY KEY,
  task           TEXT NOT NULL,
  task_signature TEXT NOT NULL,
  backend        TEXT NOT NULL,
  hardware       TEXT NOT NULL,
  technique_id   TEXT REFERENCES techniques (id),
  run_id         TEXT REFERENCES runs (id),
  attempt_id     TEXT REFERENCES attempts (id),
  language       TEXT NOT NULL,
  source         TEXT NOT NULL,
  speedup        REAL,
  time_ms        REAL,
  baseline_ms    REAL,
  atol           REAL,
  rtol           REAL,
  created_at     TEXT NOT NULL
);
CREATE INDEX implementations_by_signature ON implementations (task_signature, backend, speedup DESC);
CREATE INDEX implementations_by_task ON implementations (task);

-- support and refute are derived from claim_evidence (kept by the triggers below), so that
-- merging two knowledge bases counts each piece of evidence once.
CREATE TABLE claims (
  id           TEXT PRIMARY KEY,
  text         TEXT NOT NULL,
  state_id     TEXT REFERENCES states (id),
  technique_id TEXT REFERENCES techniques (id),
  backend      TEXT,
  support      INTEGER NOT NULL DEFAULT 0,
  refute       INTEGER NOT NULL DEFAULT 0,
  deprecated   INTEGER NOT NULL DEFAULT 0,
  origin       TEXT NOT NULL DEFAULT 'critic' CHECK (origin IN ('seed', 'critic', 'user')),
  created_at   TEXT NOT NULL
);
CREATE INDEX claims_by_arm ON claims (state_id, technique_id);

CREATE TABLE claim_evidence (
  id         TEXT PRIMARY KEY,
  claim_id   TEXT NOT NULL REFERENCES claims (id),
  attempt_id TEXT REFERENCES attempts (id),
  direction  TEXT NOT NULL CHECK (direction IN ('support', 'refute')),
  note       TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL
);
CREATE INDEX claim_evidence_by_claim ON claim_evidence (claim_id);

CREATE TRIGGER claim_evidence_counts AFTER INSERT ON claim_evidence BEGIN
  UPDATE claims
     SET support = support + (NEW.direction = 'support'),
         refute = refute + (NEW.direction = 'refute')
   WHERE id = NEW.claim_id;
END;
