/* sleeper: an idle probe that stays up with as little memory as possible.
 *
 * It waits in pause() until SIGTERM, then exits 0.  The handler matters: as
 * PID 1 of a pid namespace a process ignores every signal it has no handler
 * for, so without one SIGTERM would be dropped and only SIGKILL would work. */
#include <signal.h>
#include <unistd.h>

static void on_term(int sig)
{
    (void)sig;
    _exit(0);
}

int main(void)
{
    signal(SIGTERM, on_term);
    for (;;)
        pause();
}
