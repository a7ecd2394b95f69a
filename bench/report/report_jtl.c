/* report_jtl.c — ll-report jtl: JMeter's aggregate report (samples,
 * average, median, 90/95/99 % line, min, max, error %, throughput) from a
 * CSV results file, as bench/jmeter prints it, and the sale counts: sold
 * (200 answers), sold out (409), other, and with the stock before and
 * after, oversold and lost updates.
 */
#include "report_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- CSV */

/* JMeter's CSV results: split one line into at most max fields, in place,
 * honouring "quoted, fields" with "" for a quote. */
static int csv_split(char *line, char **field, int max)
{
    int n = 0;
    char *r = line, *w;

    while (n < max) {
        field[n++] = w = r;
        if (*r == '"') {
            r++;
            for (; *r; r++) {
                if (*r == '"' && r[1] == '"')
                    *w++ = *r++;
                else if (*r == '"')
                    break;
                else
                    *w++ = *r;
            }
            if (*r == '"')
                r++;
        } else {
            while (*r && *r != ',' && *r != '\n' && *r != '\r')
                *w++ = *r++;
        }
        if (*r != ',') {
            *w = '\0';
            break;
        }
        *w = '\0';
        r++;
    }
    return n;
}

static int csv_column(char **field, int n, const char *name)
{
    int i;
    for (i = 0; i < n; i++)
        if (strcmp(field[i], name) == 0)
            return i;
    die("JMeter results have no '%s' column (save field names: "
        "-Jjmeter.save.saveservice.print_field_names=true)", name);
}

int cmd_jtl(const char *path, long long stock, long long fin)
{
    char line[8192], *field[64];
    int nf, c_ts, c_el, c_code, c_ok, c_label;
    long long samples = 0, failures = 0, sold = 0, sold_out = 0, other = 0;
    double *el = NULL, sum = 0, first = -1, last = 0, span;
    size_t cap = 0;
    char label[128] = "";
    FILE *f = fopen(path, "r");

    if (f == NULL)
        die("%s: %s", path, strerror(errno));
    if (fgets(line, sizeof line, f) == NULL)
        die("%s: empty", path);
    nf = csv_split(line, field, 64);
    c_ts = csv_column(field, nf, "timeStamp");
    c_el = csv_column(field, nf, "elapsed");
    c_label = csv_column(field, nf, "label");
    c_code = csv_column(field, nf, "responseCode");
    c_ok = csv_column(field, nf, "success");
    while (fgets(line, sizeof line, f)) {
        double ts, e;
        if (csv_split(line, field, 64) < nf)
            continue;
        ts = atof(field[c_ts]);
        e = atof(field[c_el]);
        if ((size_t)samples == cap) {
            cap = cap ? cap * 2 : 1024;
            el = realloc(el, cap * sizeof *el);
            if (el == NULL)
                abort();                      /* out of memory */
        }
        el[samples++] = e;
        sum += e;
        if (first < 0 || ts < first)
            first = ts;
        if (ts + e > last)
            last = ts + e;
        failures += strcmp(field[c_ok], "true") != 0;
        if (strcmp(field[c_code], "200") == 0)
            sold++;
        else if (strcmp(field[c_code], "409") == 0)
            sold_out++;
        else
            other++;
        snprintf(label, sizeof label, "%s", field[c_label]);
    }
    fclose(f);
    span = (last - first) / 1000.0;
    printf("%-18s %8s %8s %7s %9s %9s %9s %6s %6s %8s %11s\n", "Label", "# Samples",
           "Average", "Median", "90% Line", "95% Line", "99% Line", "Min", "Max",
           "Error %", "Throughput");
    printf("%-18s %8lld %8.0f %7.0f %9.0f %9.0f %9.0f %6.0f %6.0f %7.2f%% %9.1f/s\n",
           label, samples, samples ? sum / (double)samples : 0.0,
           harness_percentile(el, (size_t)samples, 0.50),
           harness_percentile(el, (size_t)samples, 0.90),
           harness_percentile(el, (size_t)samples, 0.95),
           harness_percentile(el, (size_t)samples, 0.99),
           harness_percentile(el, (size_t)samples, 0.0),
           harness_percentile(el, (size_t)samples, 1.0),
           samples ? 100.0 * (double)failures / (double)samples : 0.0,
           harness_rate(samples, span));
    printf("(times in ms; errors are every answer but 2xx, sold out 409 included)\n");
    printf("answers: %lld sold (200), %lld sold out (409), %lld other\n", sold, sold_out, other);
    if (stock >= 0)
        printf("stock %lld -> final %lld: sold %lld, oversold %lld, lost updates %lld\n",
               stock, fin, sold, harness_oversold(stock, sold), harness_lost(stock, sold, fin));
    printf("jtl: samples=%lld sold=%lld sold_out=%lld other=%lld errors=%lld",
           samples, sold, sold_out, other, failures);
    if (stock >= 0)
        printf(" stock=%lld final=%lld oversold=%lld lost=%lld", stock, fin,
               harness_oversold(stock, sold), harness_lost(stock, sold, fin));
    printf("\n");
    free(el);
    return 0;
}
