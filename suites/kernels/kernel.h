/* What every labtui test kernel shares: port I/O, the COM1 serial console
 * and the isa-debug-exit device (QEMU exits with status (code << 1) | 1). */
#ifndef LABTUI_KERNEL_H
#define LABTUI_KERNEL_H

#define COM1 0x3f8
#define DEBUG_EXIT_PORT 0xf4

static inline void outb(unsigned short port, unsigned char value)
{
	__asm__ volatile("outb %0, %1" : : "a"(value), "Nd"(port));
}

static inline unsigned char inb(unsigned short port)
{
	unsigned char value;
	__asm__ volatile("inb %1, %0" : "=a"(value) : "Nd"(port));
	return value;
}

static inline void serial_init(void)
{
	outb(COM1 + 1, 0x00); /* no interrupts */
	outb(COM1 + 3, 0x80); /* DLAB on */
	outb(COM1 + 0, 0x01); /* 115200 baud */
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x03); /* 8N1, DLAB off */
	outb(COM1 + 2, 0xc7); /* FIFO on */
}

static inline void serial_puts(const char *text)
{
	for (; *text; text++) {
		while (!(inb(COM1 + 5) & 0x20))
			; /* wait for the transmit buffer */
		outb(COM1, (unsigned char)*text);
	}
}

/* End QEMU through isa-debug-exit,iobase=0xf4,iosize=0x04. */
static inline void debug_exit(unsigned char code)
{
	__asm__ volatile("outl %0, %1" : : "a"((unsigned int)code), "Nd"((unsigned short)DEBUG_EXIT_PORT));
}

#endif
