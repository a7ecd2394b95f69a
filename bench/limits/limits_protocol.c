/* limits_protocol.c — what ll-limits sends (limits_protocol.h): the
 * strategies' own definitions, by reference, and the strategies whose own
 * code it runs. */
#include "limits_protocol.h"
#include "../../locks/lock.h"
#include "../../locks/protocol.h"
#include "../../store/redis_stock.h"
#include "../../store/stock.h"

const struct limits_text_def limits_texts[LIMITS_NTEXTS] = {
    [LIMITS_READ]       = { LOCK_CEIL_SERIAL_MYSQL, "none", stock_sql_read },
    [LIMITS_WRITE]      = { LOCK_CEIL_SERIAL_MYSQL, "none", stock_sql_write },
    [LIMITS_FOR_UPDATE] = { LOCK_CEIL_FOR_UPDATE, "mysql-for-update", mysql_sql_for_update },
    [LIMITS_SHARE_MODE] = { LOCK_CEIL_SHARE_MODE, "mysql-share-mode", mysql_sql_share_mode },
    [LIMITS_OPT_READ]   = { LOCK_CEIL_OPTIMISTIC, "mysql-optimistic", mysql_sql_optimistic_read },
    [LIMITS_OPT_WRITE]  = { LOCK_CEIL_OPTIMISTIC, "mysql-optimistic", mysql_sql_optimistic_write },
    [LIMITS_SELL_ONE]   = { LOCK_CEIL_UPDATE_PEAK, "mysql-update", mysql_sql_sell_one },
    [LIMITS_NOINDEX]    = { LOCK_CEIL_UPDATE_NOINDEX, "mysql-update-noindex", mysql_sql_noindex },
    [LIMITS_DECR]       = { LOCK_CEIL_REDIS_DECR, "redis-decr", REDIS_STOCK_DECR_LUA },
};

const struct limits_run_def limits_runs[LIMITS_NRUNS] = {
    [LIMITS_RUN_LOCK_REDIS] = { LOCK_CEIL_SERIAL_REDIS, "redis-lua", LIMITS_CALL_LOCK },
    [LIMITS_RUN_LOCK_ZK]    = { LOCK_CEIL_SERIAL_ZK, "zk-sequential", LIMITS_CALL_LOCK },
    [LIMITS_RUN_WATCH]      = { LOCK_CEIL_REDIS_WATCH, "redis-watch", LIMITS_CALL_STEPS },
    [LIMITS_RUN_LOCK_STOCK] = { LOCK_CEIL_SERIAL_REDIS_STOCK, "redis-lock-stock", LIMITS_CALL_SELL },
};
