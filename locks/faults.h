/* faults.h — the faults a lock strategy is judged under: one list.
 *
 * The fault matrix (bench/compare --scenario matrix, bench/lib/
 * compare_matrix.sh) runs every strategy against every fault of this list
 * that can touch it, each applied from outside by one bench/fault verb, and
 * judges each run from its counts and the ledger alone. What a strategy
 * must survive is its claim: `exact` (an ordinary run) and `fenced` (a
 * holder paused or cut off past its lease) in its props, and, in its
 * struct lock_ops (lock.h), the faults it is known not to survive, as bits
 * of this list: `fails` without ?fence=1, `fence_fails` with it. A run
 * that loses or oversells under a fault its strategy does not list fails
 * the matrix, naming both; a listed fault is shown, not failed. The
 * server serves the list and each strategy's claims in GET /locks, and
 * ll-strategies writes them into docs/strategies.md's table, so the
 * claims, the oracle and the docs read one list.
 *
 * X(ID, name, families, what): ID makes FAULT_ID (a bit of `fails`),
 * name is what bench/compare --faults, GET /locks and the reports say,
 * families the strategy families the fault can touch, space-separated ("*"
 * for every one: a fault on the holder's instance), and what is the
 * sentence the docs and reports show. The order is the matrix's columns'.
 *
 * "The holder" is a purchase that holds its lock on instance 0 when the
 * fault comes (the matrix waits until the instance shows it there), in the
 * window of ?hold_ms (before its checks: a lease that may have ended is
 * not written under) or, for pause-late, of ?late_ms (after them: only a
 * fencing token can refuse its write).
 */
#ifndef LOCKLAB_FAULTS_H
#define LOCKLAB_FAULTS_H

#include <string.h>

#define LOCK_FAULTS(X) \
    X(PAUSE, "pause", "*", "the holder's instance paused (SIGSTOP) past its lease, in its " \
      "critical section before its checks") \
    X(PAUSE_LATE, "pause-late", "*", "the holder's instance paused past its lease after its " \
      "checks, just before its write: the window no check can close") \
    X(KILL, "kill", "*", "the holder's instance killed (SIGKILL) mid-hold, started again") \
    X(CPU, "cpu", "*", "the holder's instance starved of CPU (a 2 % cgroup quota) past its " \
      "lease: its timers and renewals late, not stopped") \
    X(REDIS_RESET, "redis-reset", "redis redis-stock hybrid", "the holder's instance's Redis " \
      "connections dropped by the server (CLIENT KILL) mid-hold") \
    X(MYSQL_RESET, "mysql-reset", "*", "the holder's instance's MariaDB sessions killed by the " \
      "server (KILL CONNECTION) mid-hold") \
    X(ZK_EXPIRE, "zk-expire", "zookeeper hybrid", "the holder's ZooKeeper session expired " \
      "from outside (the server ends it)") \
    X(ETCD_REVOKE, "etcd-revoke", "etcd", "the holder's etcd lease revoked") \
    X(PARTITION, "partition", "*", "the holder's instance cut off from its lock service " \
      "(MariaDB for the MySQL locks) past its lease, still reaching the others") \
    X(CLOCK_REDIS, "clock-redis", "redis redis-stock hybrid", "Redis's wall clock jumped " \
      "forward past the lease mid-hold (libfaketime): every expiry comes early") \
    X(CLOCK_APP, "clock-app", "redis", "one instance's clock ahead of the others' by more " \
      "than the lease while it takes the lock (?clock_skew_ms)") \
    X(REDIS_RESTART, "redis-restart", "redis redis-stock hybrid", "Redis server 1 restarted " \
      "without its data mid-hold") \
    X(FAILOVER, "failover", "redis redis-stock hybrid", "Redis server 1 failed over mid-hold " \
      "to a replica that missed the holder's lock (its link cut before)") \
    X(ZK_LEADER, "zk-leader", "zookeeper hybrid", "the ZooKeeper ensemble's leader killed " \
      "mid-hold, started again") \
    X(SLOT_MIGRATE, "slot-migrate", "redis redis-stock", "on a Redis Cluster, the product's " \
      "slot migrated to another master mid-run (ASK, then MOVED)") \
    X(ZK_SHORT, "zk-short", "zookeeper hybrid", "a ZooKeeper session granted shorter than " \
      "asked, the holder paused past the granted one but within the asked one")

/* LOCK_FAULT_ID_PAUSE … : each fault's place in the list. */
enum lock_fault_id {
#define LOCK_FAULT_ID(id, name, families, what) LOCK_FAULT_ID_##id,
    LOCK_FAULTS(LOCK_FAULT_ID)
#undef LOCK_FAULT_ID
    LOCK_FAULT_COUNT
};

/* FAULT_PAUSE … : each fault's bit, for struct lock_ops' fails. */
enum lock_fault_bit {
#define LOCK_FAULT_BIT(id, name, families, what) FAULT_##id = 1 << LOCK_FAULT_ID_##id,
    LOCK_FAULTS(LOCK_FAULT_BIT)
#undef LOCK_FAULT_BIT
};

/* Field f (0 the name, 1 the families, 2 the sentence) of fault i. */
static inline const char *lock_fault_field(int i, int f)
{
    static const char *const table[][3] = {
#define LOCK_FAULT_ROW(id, name, families, what) { name, families, what },
        LOCK_FAULTS(LOCK_FAULT_ROW)
#undef LOCK_FAULT_ROW
    };
    return i >= 0 && i < LOCK_FAULT_COUNT ? table[i][f] : NULL;
}
static inline const char *lock_fault_name(int i) { return lock_fault_field(i, 0); }
static inline const char *lock_fault_families(int i) { return lock_fault_field(i, 1); }
static inline const char *lock_fault_what(int i) { return lock_fault_field(i, 2); }

/* Does a fault's families list ("*" or space-separated names) hold
 * family? */
static inline int lock_fault_list_has(const char *list, const char *family)
{
    const char *at;
    size_t n = strlen(family);

    if (list == NULL)
        return 0;
    if (strcmp(list, "*") == 0)
        return 1;
    for (at = strstr(list, family); at; at = strstr(at + 1, family))
        if ((at == list || at[-1] == ' ') && (at[n] == ' ' || at[n] == '\0'))
            return 1;
    return 0;
}

/* Can fault i touch a strategy of family? */
static inline int lock_fault_touches(int i, const char *family)
{
    return lock_fault_list_has(lock_fault_families(i), family);
}

#endif /* LOCKLAB_FAULTS_H */
