/* report_base.c — what every part of ll-report stands on: reading JSON and
 * key=value files, writing a document's files, the typed lookups every
 * section uses, and the few facts of a run that several sections name:
 * its label, its strategy's entry in GET /locks, a load's steady rate.
 * A file that is not what it should be stops ll-report with its name and
 * what is wrong (die(), bench/common/cli.h); a missing key reads as 0 or a
 * default, since an older run may not have it.
 */
#include "report_private.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- loading */

json_t *load_json(const char *path)
{
    json_error_t e;
    json_t *j = strcmp(path, "-") ? json_load_file(path, 0, &e) : json_loadf(stdin, 0, &e);
    if (j == NULL)
        die("%s:%d: %s", path, e.line, e.text);
    return j;
}

char *path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p == NULL)
        abort();                              /* out of memory */
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static void write_one(const char *dir, const char *name, const char *ext,
                      void (*fn)(FILE *, const json_t *), const json_t *doc)
{
    size_t n = strlen(name) + strlen(ext) + 1;
    char *file = malloc(n), *p;
    FILE *f;

    if (file == NULL)
        abort();                              /* out of memory */
    snprintf(file, n, "%s%s", name, ext);
    p = path_join(dir, file);
    if (fn == NULL) {
        if (json_dump_file(doc, p, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0)
            die("%s: cannot write", p);
    } else if ((f = fopen(p, "w")) == NULL || (fn(f, doc), fclose(f)) != 0) {
        die("%s: cannot write", p);
    }
    free(p);
    free(file);
}

void write_docs(const char *dir, const char *name, const json_t *doc,
                void (*md)(FILE *, const json_t *), void (*html)(FILE *, const json_t *))
{
    write_one(dir, name, ".json", NULL, doc);
    write_one(dir, name, ".md", md, doc);
    write_one(dir, name, ".html", html, doc);
}

/* key=value lines into a JSON object of strings (numbers stay strings:
 * bench/compare writes both, and the reports print them as given). */
json_t *load_env(const char *path)
{
    json_t *o = json_object();
    char line[1024];
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return o;
    while (fgets(line, sizeof line, f)) {
        char *eq = strchr(line, '='), *end = line + strcspn(line, "\r\n");
        *end = '\0';
        if (eq == NULL || eq == line)
            continue;
        *eq = '\0';
        json_object_set_new(o, line, json_string(eq + 1));
    }
    fclose(f);
    return o;
}

long long jint(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v))
        return (long long)json_integer_value(v);
    if (json_is_real(v))
        return (long long)json_real_value(v);
    if (json_is_string(v))
        return atoll(json_string_value(v));
    return 0;
}

double jnum(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_number(v))
        return json_number_value(v);
    if (json_is_string(v))
        return atof(json_string_value(v));
    return 0.0;
}

const char *jstr(const json_t *o, const char *key, const char *def)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : def;
}

json_t *load_numbered(const char *dir, const char *stem)
{
    json_t *all = json_array();
    char name[256], *p;
    FILE *probe;
    int k;

    for (k = 0;; k++) {
        snprintf(name, sizeof name, "%s-%d.json", stem, k);
        p = path_join(dir, name);
        if ((probe = fopen(p, "r")) != NULL) {
            fclose(probe);
            json_array_append_new(all, load_json(p));
        }
        free(p);
        if (probe == NULL)
            return all;
    }
}

json_t *load_part(const char *dir, const char *fmt, const char *idx, int optional)
{
    char name[256], *p;
    json_t *j;

    snprintf(name, sizeof name, fmt, idx);
    p = path_join(dir, name);
    j = optional ? json_load_file(p, 0, NULL) : load_json(p);
    free(p);
    return j;
}

/* ---------------------------------------------------------------- a run's facts */

const char *run_label(const json_t *run, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s", jstr(run, "strategy", "?"),
             json_is_true(json_object_get(run, "fence")) ? " +fence" : "");
    return buf;
}

const json_t *lock_entry(const json_t *locks, const char *name)
{
    const json_t *s;
    size_t i;

    json_array_foreach(json_object_get(locks, "strategies"), i, s)
        if (!strcmp(jstr(s, "name", ""), name))
            return s;
    return NULL;
}

double load_steady_rate(const json_t *load)
{
    const json_t *sold = json_object_get(json_object_get(load, "per_second"), "sold");
    double elapsed = jnum(load, "elapsed_s");
    long long v[600];
    size_t i, n = json_array_size(sold);

    if (n == 0)
        return -1.0;
    for (i = 0; i < n && i < sizeof v / sizeof v[0]; i++)
        v[i] = (long long)json_integer_value(json_array_get(sold, i));
    /* The first second holds the ramp: left out when a whole one follows. */
    return harness_steady_rate(v, i, elapsed, elapsed >= 2.0 ? 1 : 0);
}

double axis_step(double max, int ticks)
{
    double raw = (max > 0 ? max : 1) / (ticks > 0 ? ticks : 1);
    double mag = pow(10, floor(log10(raw))), r = raw / mag;

    return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}
