-- Schema version 2: reward statistics per (state, technique, backend, hardware), the UCB
-- selector's input. Derived from attempts by a trigger, so import and merge keep them right.

CREATE TABLE reward_stats (
  state_id      TEXT NOT NULL,
  technique_id  TEXT NOT NULL,
  backend       TEXT NOT NULL,
  hardware      TEXT NOT NULL,
  n             INTEGER NOT NULL,
  sum_reward    REAL NOT NULL,
  sum_sq_reward REAL NOT NULL,
  best_reward   REAL NOT NULL,
  last_at       TEXT NOT NULL,
  PRIMARY KEY (state_id, technique_id, backend, hardware)
) WITHOUT ROWID;

CREATE TRIGGER attempts_reward_stats AFTER INSERT ON attempts
WHEN NEW.reward IS NOT NULL AND NEW.state_id IS NOT NULL AND NEW.technique_id IS NOT NULL
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

-- Attempts recorded under version 1 enter the statistics now.
INSERT INTO reward_stats (state_id, technique_id, backend, hardware, n, sum_reward, sum_sq_reward,
                          best_reward, last_at)
SELECT state_id, technique_id, backend, hardware, count(*), sum(reward), sum(reward * reward),
       max(reward), max(created_at)
  FROM attempts
 WHERE reward IS NOT NULL AND state_id IS NOT NULL AND technique_id IS NOT NULL
 GROUP BY state_id, technique_id, backend, hardware;

CREATE INDEX implementations_by_task_speed ON implementations (task, backend, speedup DESC);
