/* attack-cpu: the CPU attacker of the Docker/Unikraft isolation study
 * (section 5.2): check every number from 1 up for primality by trial
 * division, over and over, until killed.
 *
 *   attack-cpu [LIMIT]      LIMIT default 1000000000, as in the study
 *
 * Exits 0 on SIGTERM (it runs as PID 1 of its pid namespace, which ignores
 * signals it has no handler for). */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

static void on_term(int sig)
{
    (void)sig;
    _exit(0);
}

static int is_prime(unsigned long n)
{
    if (n < 2)
        return 0;
    for (unsigned long d = 2; d * d <= n; d++)
        if (n % d == 0)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    unsigned long limit = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000000UL;
    volatile unsigned long found = 0;
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    for (;;)
        for (unsigned long n = 1; n <= limit; n++)
            found += (unsigned long)is_prime(n);
}
