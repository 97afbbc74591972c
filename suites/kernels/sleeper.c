/* sleeper: prints its marker on COM1, then halts forever with interrupts
 * off, so it costs the host nothing but the QEMU process itself. */
#include "kernel.h"

void kmain(void)
{
	serial_init();
	serial_puts("labtui-kernel sleeper: ready\n");
	for (;;)
		__asm__ volatile("cli; hlt");
}
