-- Schema version 7: a seed state that a later catalogue dropped is kept, retired, instead of
-- deleted: attempts, claims and statistics recorded under it still name it, but the classifier no
-- longer assigns it (issue 27: latency-bound, decided from speed-of-light fractions alone, sent
-- memory-bound problems to launch and occupancy work). The seed marks the retired rows.
ALTER TABLE states ADD COLUMN retired INTEGER NOT NULL DEFAULT 0 CHECK (retired IN (0, 1));
