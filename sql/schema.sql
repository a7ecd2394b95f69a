-- locklab schema: the seeds' tables, kept recognisable.
--
-- db_stock is seed 000's stock table (id, product_code, stock_code = the
-- warehouse, count) plus the `version` column its optimistic-lock section
-- adds. db_lock is seed 000 §2's lock table with its unique lock_name, plus
-- the fixes the seed itself proposes: the holder's server and thread (so the
-- same thread can re-enter, hold_count counts the entries) and an expiry so
-- that a crashed holder's row is taken over.

CREATE TABLE IF NOT EXISTS db_stock (
    id            BIGINT       NOT NULL AUTO_INCREMENT,
    product_code  VARCHAR(32)  NOT NULL,
    stock_code    VARCHAR(32)  NOT NULL,
    count         INT          NOT NULL,
    version       BIGINT       NOT NULL DEFAULT 0,
    PRIMARY KEY (id),
    UNIQUE KEY uk_product_stock (product_code, stock_code)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

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
    PRIMARY KEY (id),
    UNIQUE KEY idx_unique (lock_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
