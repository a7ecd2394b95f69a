-- locklab schema: the seeds' tables, kept recognisable, and the ledger.
--
-- db_stock is seed 000's stock table (id, product_code, stock_code = the
-- warehouse, count) plus the `version` column its optimistic-lock section
-- adds, and `fence`, the highest fencing token a write has carried, with
-- `fence_by`, the lock service that issued it (?fence=1: a write with a
-- lower token of the same service changes nothing). db_lock is seed 000 §2's lock table with its unique lock_name, plus
-- the fixes the seed itself proposes: the holder's server and thread (so the
-- same thread can re-enter, hold_count counts the entries) and an expiry so
-- that a crashed holder's row is taken over.
--
-- `sku` is the product's code once more, as a column without an index (a
-- generated copy of product_code, so every row has it): seed 001's pitfall,
-- the conditional UPDATE whose WHERE no index serves, which locks every row
-- it scans (mysql-update-noindex). Nothing else reads it.

CREATE TABLE IF NOT EXISTS db_stock (
    id            BIGINT       NOT NULL AUTO_INCREMENT,
    product_code  VARCHAR(32)  NOT NULL,
    stock_code    VARCHAR(32)  NOT NULL,
    count         INT          NOT NULL,
    version       BIGINT       NOT NULL DEFAULT 0,
    fence         BIGINT       NOT NULL DEFAULT 0,
    fence_by      VARCHAR(16)  NOT NULL DEFAULT '',
    sku           VARCHAR(32)  AS (product_code) PERSISTENT,
    PRIMARY KEY (id),
    UNIQUE KEY uk_product_stock (product_code, stock_code)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- A data folder made before the fencing columns gets them here (bench/stack
-- loads this file at every `up`).
ALTER TABLE db_stock ADD COLUMN IF NOT EXISTS fence BIGINT NOT NULL DEFAULT 0;
ALTER TABLE db_stock ADD COLUMN IF NOT EXISTS fence_by VARCHAR(16) NOT NULL DEFAULT '';
ALTER TABLE db_stock ADD COLUMN IF NOT EXISTS sku VARCHAR(32) AS (product_code) PERSISTENT;

CREATE TABLE IF NOT EXISTS db_lock (
    id            BIGINT       NOT NULL AUTO_INCREMENT,
    lock_name     VARCHAR(50)  NOT NULL COMMENT 'lock name',
    class_name    VARCHAR(100) DEFAULT NULL COMMENT 'class name (seed column)',
    method_name   VARCHAR(50)  DEFAULT NULL COMMENT 'method name (seed column)',
    server_name   VARCHAR(64)  DEFAULT NULL COMMENT 'holder instance',
    thread_name   VARCHAR(64)  DEFAULT NULL COMMENT 'holder slot',
    hold_count    INT          NOT NULL DEFAULT 1 COMMENT 're-entries',
    create_time   TIMESTAMP(3) NULL DEFAULT NULL COMMENT 'acquired at',
    expire_time   TIMESTAMP(3) NULL DEFAULT NULL COMMENT 'taken over after',
    `desc`        VARCHAR(100) DEFAULT NULL,
    fence         BIGINT       NOT NULL DEFAULT 0 COMMENT 'fencing token of this hold',
    PRIMARY KEY (id),
    UNIQUE KEY idx_unique (lock_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
ALTER TABLE db_lock ADD COLUMN IF NOT EXISTS fence BIGINT NOT NULL DEFAULT 0;

-- mysql-lock-table's fencing tokens (?fence=1): every acquisition, insert
-- or take-over, draws the next value into its row's `fence`. A sequence
-- outlives the rows, which release deletes.
CREATE SEQUENCE IF NOT EXISTS db_lock_fence;

-- The sales ledger of instances run with --ledger (bench/ledger/ledger.h): one
-- row per sale, written in the same transaction as its stock write, so
-- that rows are numbered in the order their writes committed (the stock
-- row's lock orders them); POST /stock/reset starts a product's ledger
-- with a 'reset' row whose count_written is the new stock. ll-check reads
-- nothing else. cs_*_us: the sale's critical section on the instances'
-- CLOCK_MONOTONIC (one machine, one clock), from the moment it held its
-- lock to the moment it wrote; 0, 0 for a sale with none of its own.
CREATE TABLE IF NOT EXISTS db_ledger (
    id            BIGINT       NOT NULL AUTO_INCREMENT,
    stock_id      BIGINT       NOT NULL,
    instance      VARCHAR(64)  NOT NULL,
    slot          INT          NOT NULL,
    strategy      VARCHAR(64)  NOT NULL,
    token_src     VARCHAR(16)  NOT NULL DEFAULT '',
    token         BIGINT       NOT NULL DEFAULT 0,
    count_read    BIGINT       NOT NULL,
    count_written BIGINT       NOT NULL,
    cs_start_us   BIGINT       NOT NULL DEFAULT 0,
    cs_end_us     BIGINT       NOT NULL DEFAULT 0,
    PRIMARY KEY (id),
    KEY k_stock (stock_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The stock in Redis (store/redis_stock.h): what MariaDB knows of it.
-- POST /stock/reset loads a product's count into both stores and starts a
-- new epoch of its Redis stock here first; the consumer of the sales
-- stream stock:<P>:sales applies an entry only when its epoch is the
-- product's epoch here, so an entry sold before a reset never lands on the
-- count the reset wrote. `applied` counts the units applied in this epoch:
-- count + applied is the count the reset loaded, whatever the consumer has
-- done, which is what the three-way reconciliation of GET /stock adds up.
CREATE TABLE IF NOT EXISTS db_redis_stock (
    stock_id      BIGINT       NOT NULL,
    epoch         BIGINT       NOT NULL DEFAULT 0,
    applied       BIGINT       NOT NULL DEFAULT 0,
    PRIMARY KEY (stock_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- One row per batch of a sales stream's entries applied to db_stock, written
-- in the same transaction as the units it took: the entries with stream IDs
-- (ms, seq) from first to last. A batch a consumer read as new entries
-- (XREADGROUP … >) holds every entry of the stream between its first and
-- last, and no other batch of new entries holds any of them, so under
-- db_redis_stock's row lock an entry delivered again (claimed from a
-- consumer that died between its COMMIT and its XACK) is found in its
-- batch and applied no second time; one whose batch never committed is
-- applied then, as a batch of its own. Rows of an earlier epoch are deleted
-- by POST /stock/reset.
CREATE TABLE IF NOT EXISTS db_redis_batch (
    stock_id      BIGINT       NOT NULL,
    epoch         BIGINT       NOT NULL,
    first_ms      BIGINT       NOT NULL,
    first_seq     BIGINT       NOT NULL,
    last_ms       BIGINT       NOT NULL,
    last_seq      BIGINT       NOT NULL,
    entries       INT          NOT NULL,
    units         BIGINT       NOT NULL,
    PRIMARY KEY (stock_id, epoch, first_ms, first_seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Orders (POST /order, app/order.h), seed 002's idempotent order: one row
-- per order number, whatever the number of attempts. For the strategies
-- that sell MariaDB's stock the row is claimed (state 'pending') before the
-- sale and carries its outcome after; for the Redis stock the order is
-- recorded in Redis by the step that sells it, and the consumer writes the
-- row here afterwards. user_key is the user when the order asked for one
-- order per user and product (NULL otherwise, which the unique key ignores).
CREATE TABLE IF NOT EXISTS db_order (
    id            BIGINT       NOT NULL AUTO_INCREMENT,
    order_no      VARCHAR(64)  NOT NULL,
    stock_id      BIGINT       NOT NULL,
    qty           INT          NOT NULL,
    user          VARCHAR(64)  DEFAULT NULL,
    user_key      VARCHAR(64)  DEFAULT NULL,
    strategy      VARCHAR(64)  NOT NULL,
    state         VARCHAR(16)  NOT NULL COMMENT 'pending, sold, sold_out, unknown',
    remaining     BIGINT       DEFAULT NULL,
    instance      VARCHAR(64)  NOT NULL,
    created       TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    UNIQUE KEY uk_order_no (order_no),
    UNIQUE KEY uk_user (stock_id, user_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- A product's stock split in K buckets (POST /stock/reset?buckets=K, the
-- strategies mysql-buckets and redis-buckets): its rows in warehouses 001
-- to K of db_stock, 001 being the product's own. `buckets` is K; no row
-- means 1. Rows past K are never deleted (their ids stay), only emptied.
CREATE TABLE IF NOT EXISTS db_bucket (
    product_code  VARCHAR(32)  NOT NULL,
    buckets       INT          NOT NULL,
    PRIMARY KEY (product_code)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
