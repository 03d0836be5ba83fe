-- 30 %: a cone search through the GiST index on ll_to_earth(dec, ra); centre in thousandths of a degree
\set ra random(0, 359999)
\set dec random(-80000, 80000)
SELECT id, ra, dec, mag FROM sources
 WHERE earth_box(ll_to_earth(:dec / 1000.0, :ra / 1000.0), :radius) @> ll_to_earth(dec, ra)
   AND earth_distance(ll_to_earth(:dec / 1000.0, :ra / 1000.0), ll_to_earth(dec, ra)) < :radius;
