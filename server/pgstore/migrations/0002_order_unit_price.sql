-- 0002_order_unit_price: the unit price an order was placed at (cents), so
-- that reading an order back shows what was paid even if the product's
-- price changes later. Orders placed before this migration have none:
-- readers fall back to the product's current price.

ALTER TABLE orders ADD COLUMN unit_price bigint
    CONSTRAINT orders_unit_price_check CHECK (unit_price >= 0);
