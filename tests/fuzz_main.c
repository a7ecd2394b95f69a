/* fuzz_main.c — replay fuzz_request.c's corpus without libFuzzer.
 *
 *     test_fuzz_request FILE|DIR ...
 *
 * Every file named, and every file in every folder named, is one input to
 * LLVMFuzzerTestOneInput(). This is how every build (gcc, the sanitizers)
 * runs the seed corpus in tests/fuzz/ as a unit test; CI also runs the real
 * fuzzer (clang -fsanitize=fuzzer) for a bounded time.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    static uint8_t buf[1 << 16];
    FILE *f = fopen(path, "rb");
    size_t n;

    if (f == NULL) {
        perror(path);
        return -1;
    }
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    return 1;
}

static int run_dir(const char *dir)
{
    struct dirent *e;
    char path[4096];
    int n = 0, k;
    DIR *d = opendir(dir);

    if (d == NULL) {
        perror(dir);
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if ((k = run_file(path)) < 0) {
            closedir(d);
            return -1;
        }
        n += k;
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    struct stat st;
    int i, n, total = 0;

    for (i = 1; i < argc; i++) {
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        n = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
        if (n < 0)
            return 1;
        total += n;
    }
    printf("fuzz_request: %d inputs replayed, every check held\n", total);
    return total > 0 ? 0 : 1;
}
