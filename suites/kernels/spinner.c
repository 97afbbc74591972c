/* spinner: the CPU attacker.  Prints its marker on COM1, then spins on its
 * virtual CPU forever, keeping one host CPU busy. */
#include "kernel.h"

void kmain(void)
{
	volatile unsigned long counter = 0;

	serial_init();
	serial_puts("labtui-kernel spinner: ready\n");
	for (;;)
		counter++;
}
