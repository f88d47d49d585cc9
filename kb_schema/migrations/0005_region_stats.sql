-- Schema version 5: the knowledge base at region level (issue 24). An attempt on a region window
-- of a model carries the region's signature (its ops' kinds and shape class, from
-- worker/mblast_regions/identity.py) and its exact key (equal where the same computation appears
-- again). Its reward, the region's own implied speedup as a log, goes to region_stats per
-- (region, state, technique, backend, hardware), not to the whole-model reward_stats: a region's
-- gain on the model is bounded by its share of the time.

ALTER TABLE attempts ADD COLUMN region TEXT;
ALTER TABLE attempts ADD COLUMN region_key TEXT;
CREATE INDEX attempts_by_region_key ON attempts (region_key, backend, hardware)
  WHERE region_key IS NOT NULL;

CREATE TABLE region_stats (
  region        TEXT NOT NULL,
  state_id      TEXT NOT NULL,
  technique_id  TEXT NOT NULL,
  backend       TEXT NOT NULL,
  hardware      TEXT NOT NULL,
  n             INTEGER NOT NULL,
  sum_reward    REAL NOT NULL,
  sum_sq_reward REAL NOT NULL,
  best_reward   REAL NOT NULL,
  last_at       TEXT NOT NULL,
  PRIMARY KEY (region, state_id, technique_id, backend, hardware)
) WITHOUT ROWID;

DROP TRIGGER attempts_reward_stats;
CREATE TRIGGER attempts_reward_stats AFTER INSERT ON attempts
WHEN NEW.reward IS NOT NULL AND NEW.state_id IS NOT NULL AND NEW.technique_id IS NOT NULL
     AND NEW.region IS NULL
BEGIN
  INSERT INTO reward_stats (state_id, technique_id, backend, hardware, n, sum_reward,
                            sum_sq_reward, best_reward, last_at)
  VALUES (NEW.state_id, NEW.technique_id, NEW.backend, NEW.hardware, 1, NEW.reward,
          NEW.reward * NEW.reward, NEW.reward, NEW.created_at)
  ON CONFLICT (state_id, technique_id, backend, hardware) DO UPDATE SET
    n = n + 1,
    sum_reward = sum_reward + excluded.sum_reward,
    sum_sq_reward = sum_sq_reward + excluded.sum_sq_reward,
    best_reward = max(best_reward, excluded.best_reward),
    last_at = max(last_at, excluded.last_at);
END;

CREATE TRIGGER attempts_region_stats AFTER INSERT ON attempts
WHEN NEW.reward IS NOT NULL AND NEW.state_id IS NOT NULL AND NEW.technique_id IS NOT NULL
     AND NEW.region IS NOT NULL
BEGIN
  INSERT INTO region_stats (region, state_id, technique_id, backend, hardware, n, sum_reward,
                            sum_sq_reward, best_reward, last_at)
  VALUES (NEW.region, NEW.state_id, NEW.technique_id, NEW.backend, NEW.hardware, 1, NEW.reward,
          NEW.reward * NEW.reward, NEW.reward, NEW.created_at)
  ON CONFLICT (region, state_id, technique_id, backend, hardware) DO UPDATE SET
    n = n + 1,
    sum_reward = sum_reward + excluded.sum_reward,
    sum_sq_reward = sum_sq_reward + excluded.sum_sq_reward,
    best_reward = max(best_reward, excluded.best_reward),
    last_at = max(last_at, excluded.last_at);
END;
