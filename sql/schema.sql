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

CREATE TABLE IF NOT EXISTS db_stock (
    id            BIGINT       NOT NULL AUTO_INCREMENT,
    product_code  VARCHAR(32)  NOT NULL,
    stock_code    VARCHAR(32)  NOT NULL,
    count         INT          NOT NULL,
    version       BIGINT       NOT NULL DEFAULT 0,
    fence         BIGINT       NOT NULL DEFAULT 0,
    fence_by      VARCHAR(16)  NOT NULL DEFAULT '',
    PRIMARY KEY (id),
    UNIQUE KEY uk_product_stock (product_code, stock_code)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- A data folder made before the fencing columns gets them here (bench/stack
-- loads this file at every `up`).
ALTER TABLE db_stock ADD COLUMN IF NOT EXISTS fence BIGINT NOT NULL DEFAULT 0;
ALTER TABLE db_stock ADD COLUMN IF NOT EXISTS fence_by VARCHAR(16) NOT NULL DEFAULT '';

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

-- The sales ledger of instances run with --ledger (bench/ledger.h): one
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
