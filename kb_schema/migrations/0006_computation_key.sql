-- Schema version 6: an attempt on a region window also carries the region's computation key
-- (worker/mblast_regions/identity.py: its exact key with the values' shapes left out), so that the
-- same computation at other sizes first retries what held before (issue 26, item 3).

ALTER TABLE attempts ADD COLUMN computation_key TEXT;
CREATE INDEX attempts_by_computation_key ON attempts (computation_key, backend, hardware)
  WHERE computation_key IS NOT NULL;
