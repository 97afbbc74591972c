/* hello: the smallest probe.  It prints one line and exits 0, so the time
 * from create to exit measures how fast a backend starts a program. */
#include <stdio.h>

int main(void)
{
    puts("hello from labtui");
    return 0;
}
