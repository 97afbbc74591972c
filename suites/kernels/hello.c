/* hello: the smallest test kernel.  It prints its marker on COM1 and exits
 * QEMU through isa-debug-exit with guest code 0 (QEMU exit status 1), so the
 * time from launch to exit is the boot time of a unikernel that does nothing. */
#include "kernel.h"

void kmain(void)
{
	serial_init();
	serial_puts("labtui-kernel hello: ready\n");
	debug_exit(0);
}
