/* Multiboot (v1) entry shared by every labtui test kernel.
 *
 * QEMU's -kernel loads 32-bit multiboot ELF images directly (no bootloader):
 * it finds this header in the first 8 KiB, enters _start in 32-bit protected
 * mode with paging off, and we only set up a stack and call kmain(). */
#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0x00000003 /* page-align modules, provide a memory map */

	.section .multiboot, "a"
	.align 4
	.long MB_MAGIC
	.long MB_FLAGS
	.long -(MB_MAGIC + MB_FLAGS)

	.section .bss
	.align 16
stack_bottom:
	.skip 16384
stack_top:

	.section .text
	.global _start
	.type _start, @function
_start:
	cli
	mov $stack_top, %esp
	call kmain
1:	hlt
	jmp 1b

	.section .note.GNU-stack, "", @progbits
