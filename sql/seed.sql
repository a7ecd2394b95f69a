-- The seeds' product: 1001 in warehouse 001 with 5000 units. 1002 is a
-- second product so that tests can show strategies lock per product.
INSERT INTO db_stock (product_code, stock_code, count, version)
VALUES ('1001', '001', 5000, 0), ('1002', '001', 5000, 0)
ON DUPLICATE KEY UPDATE product_code = product_code;
