/* protocol.h — the statements and scripts of the strategies, each defined
 * once in the file that sends it, which a strategy's table lists as what
 * it sends (struct lock_ops's protocol) and ll-limits sends as they are
 * (bench/limits/limits_protocol.c): a ceiling bounds the very protocol its
 * strategies speak. The plain read and write of a sale are the store's
 * (store/stock.h: stock_sql_read, stock_sql_write), the Redis stock's
 * check-and-decrement script store/redis_stock.h's REDIS_STOCK_DECR_LUA.
 */
#ifndef LOCKLAB_PROTOCOL_H
#define LOCKLAB_PROTOCOL_H

extern const char mysql_sql_for_update[];       /* mysql_for_update.c  */
extern const char mysql_sql_share_mode[];       /* mysql_share_mode.c  */
extern const char mysql_sql_optimistic_read[];  /* mysql_optimistic.c  */
extern const char mysql_sql_optimistic_write[];
extern const char mysql_sql_sell_one[];         /* mysql_queue.c: mysql-update's */
extern const char mysql_sql_noindex[];          /* mysql_update_noindex.c */
extern const char redis_compare_and_delete_lua[];  /* redis_common.c: a token lock's release */

#endif /* LOCKLAB_PROTOCOL_H */
