-- 70 %: an indexed source-id lookup
\set id random(1, :rows)
SELECT id, ra, dec, mag FROM sources WHERE id = :id;
