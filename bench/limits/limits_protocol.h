/* limits_protocol.h — the statements and scripts ll-limits sends to the
 * servers (bench/limits/limits_protocol.c), each taken from its one
 * definition in the strategy whose protocol the ceiling bounds: change a
 * strategy's statement and its ceiling sends the new one. Each entry names
 * that strategy; tests/test_unit.c holds every entry against the
 * strategy's own list in the registry (struct lock_ops's protocol), so a
 * text typed again here, or a strategy that no longer sends it, fails.
 */
#ifndef LOCKLAB_LIMITS_PROTOCOL_H
#define LOCKLAB_LIMITS_PROTOCOL_H

enum limits_text {
    LIMITS_READ,                /* SELECT count: the plain read            */
    LIMITS_WRITE,               /* UPDATE count = ?: the plain write       */
    LIMITS_FOR_UPDATE,          /* SELECT … FOR UPDATE                     */
    LIMITS_SHARE_MODE,          /* SELECT … LOCK IN SHARE MODE             */
    LIMITS_OPT_READ,            /* SELECT count, version                   */
    LIMITS_OPT_WRITE,           /* UPDATE … WHERE version = ?              */
    LIMITS_SELL_ONE,            /* UPDATE count = count − 1 WHERE … >= 1   */
    LIMITS_NOINDEX,             /* UPDATE … WHERE sku = ? (no index)       */
    LIMITS_RELEASE,             /* Redis: the compare-and-delete script    */
    LIMITS_DECR,                /* Redis stock: the check-and-decrement    */
    LIMITS_NTEXTS
};

struct limits_text_def {
    const char *ceiling;        /* the first ceiling that sends it         */
    const char *strategy;       /* whose definition it is (GET /locks name) */
    const char *text;
};

extern const struct limits_text_def limits_texts[LIMITS_NTEXTS];

#endif /* LOCKLAB_LIMITS_PROTOCOL_H */
