/* attack-mem: the memory attacker of the Docker/Unikraft isolation study
 * (section 5.2): STREAM's copy, scale, add and triad kernels over arrays
 * much larger than the caches, over and over, until killed.
 *
 *   attack-mem [MB]      MB per array, default 64 (three arrays)
 *
 * Exits 0 on SIGTERM. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

static void on_term(int sig)
{
    (void)sig;
    _exit(0);
}

int main(int argc, char **argv)
{
    long mb = argc > 1 ? atol(argv[1]) : 64;
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    size_t n = (size_t)(mb > 0 ? mb : 64) * 1000000 / sizeof(double);
    volatile double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)), *c = malloc(n * sizeof(double));
    if (!a || !b || !c)
        return 1;
    const double q = 3.0;
    for (size_t j = 0; j < n; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
    for (;;) {
        for (size_t j = 0; j < n; j++) c[j] = a[j];
        for (size_t j = 0; j < n; j++) b[j] = q * c[j];
        for (size_t j = 0; j < n; j++) c[j] = a[j] + b[j];
        for (size_t j = 0; j < n; j++) a[j] = b[j] + q * c[j];
    }
}
