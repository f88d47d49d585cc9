-- Schema version 3: `kb query --kind attempts` filtered by technique, backend and a state subtree
-- scanned the whole table (the state filter is `state_id = ? OR state_id LIKE ? || '/%'`, which
-- the (state_id, ...) index cannot serve). Measured with benchmarks/kb_bench at 1M attempts:
-- p50 0.33 s before this index.
CREATE INDEX attempts_by_technique ON attempts (technique_id, backend, created_at, state_id);
