\set id random(1, :rows)
SELECT v FROM items WHERE id = :id;
