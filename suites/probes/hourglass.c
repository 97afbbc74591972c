/* hourglass: how much CPU a spinning process receives, and the gaps when it
 * does not run, in the manner of Hourglass (Regehr).
 *
 *   hourglass MODE [SECONDS] [GAP_US]     MODE: share maxgap meangap
 *
 * Spins reading CLOCK_MONOTONIC for SECONDS.  A jump between two readings of
 * more than GAP_US (default 50) microseconds is a gap: time the process was
 * not running.  share = 1 - gaps/elapsed (fraction of wall time received,
 * higher is better); maxgap and meangap are in microseconds (lower is better). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "share";
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    double threshold = (argc > 3 ? atof(argv[3]) : 50.0) * 1e-6;
    if (seconds <= 0 || threshold <= 0 || (strcmp(mode, "share") && strcmp(mode, "maxgap") && strcmp(mode, "meangap"))) {
        fprintf(stderr, "usage: hourglass share|maxgap|meangap [SECONDS] [GAP_US]\n");
        return 2;
    }
    double start = now_s(), last = start, now, lost = 0.0, max_gap = 0.0;
    long long gaps = 0;
    do {
        now = now_s();
        double d = now - last;
        if (d > threshold) {
            lost += d;
            gaps++;
            if (d > max_gap)
                max_gap = d;
        }
        last = now;
    } while (now - start < seconds);
    double elapsed = now - start;
    if (!strcmp(mode, "share"))
        printf("{\"benchmark\":\"hourglass\",\"metric\":\"cpu_share\",\"value\":%.6g,\"unit\":\"ratio\",\"better\":\"higher\"}\n",
               1.0 - lost / elapsed);
    else
        printf("{\"benchmark\":\"hourglass\",\"metric\":\"%s_us\",\"value\":%.6g,\"unit\":\"us\",\"better\":\"lower\"}\n",
               mode, !strcmp(mode, "maxgap") ? max_gap * 1e6 : gaps ? lost / (double)gaps * 1e6 : 0.0);
    return 0;
}
