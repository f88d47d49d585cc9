-- Schema version 4: a state's likely winners, ranked (a JSON array of technique ids, best bet
-- first). The technique selector turns the rank into a prior that orders the arms not yet tried
-- in that state, so a launch-bound model tries a CUDA graph before a compile (issue 21, item 2).
-- Seed states get theirs from seed/states.json when the seed is applied.
ALTER TABLE states ADD COLUMN try_first TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(try_first));
