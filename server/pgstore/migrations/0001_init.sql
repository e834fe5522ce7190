-- 0001_init: users, products and orders.

CREATE TABLE users (
    id            bigserial   PRIMARY KEY,
    login_id      text        NOT NULL UNIQUE,
    password_hash text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE products (
    id    bigserial PRIMARY KEY,
    name  text      NOT NULL,
    price bigint    NOT NULL CONSTRAINT products_price_check CHECK (price >= 0),
    stock bigint    NOT NULL CONSTRAINT products_stock_check CHECK (stock >= 0)
);

CREATE TABLE orders (
    id         bigserial   PRIMARY KEY,
    user_id    bigint      NOT NULL CONSTRAINT orders_user_id_fkey REFERENCES users (id),
    product_id bigint      NOT NULL CONSTRAINT orders_product_id_fkey REFERENCES products (id),
    quantity   integer     NOT NULL CONSTRAINT orders_quantity_check CHECK (quantity > 0),
    room       text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX orders_user_id_idx ON orders (user_id);
