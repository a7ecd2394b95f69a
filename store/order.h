/* order.h — an order as the stores keep it (app/orders.h tells the
 * whole story of POST /order): what the request asks, and what the order's
 * store says of it. The Redis stock's strategies (store/redis_stock.h) read
 * and fill it too, since their step records the order in Redis. */
#ifndef LOCKLAB_ORDER_H
#define LOCKLAB_ORDER_H

#include "stock.h"

#define ORDER_NO_MAX 64         /* order_no and user: [A-Za-z0-9_-], 1..64 */

struct order {
    /* What the request asks. */
    const char *no;
    const char *user;           /* NULL when none                         */
    int         one_per_user;
    int         lose_claim;     /* fault: the claim's answer lost (app/orders.c) */

    /* What the order's store says, filled by the sale. */
    int         ran;            /* this request's sale ran (a first attempt) */
    int         replayed;       /* the order existed: first_* is its answer */
    int         user_limit;     /* the user has another order of the product */
    int         first_status;   /* LL_OK, LL_SOLD_OUT or LL_UNKNOWN        */
    long long   first_remaining;/* -1 when not known                      */
    long long   first_qty;
    char        first_product[STOCK_CODE_MAX + 1];
    char        other[ORDER_NO_MAX + 1];    /* user_limit: the user's order,
                                             * when the store knows it    */
    char        warning[256];   /* sold, but its record could not be written */
};

#endif /* LOCKLAB_ORDER_H */
