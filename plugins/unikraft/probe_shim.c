/* Linked into every labtui probe that Unikraft's ELF loader runs (elfprobes.py).
 *
 * The probe's own main is renamed labtui_probe_main (-Dmain=...).  This main
 * says on stderr that the probe started (the instance's ready line), runs it,
 * and at its exit flushes stdio and writes the exit status to QEMU's
 * isa-debug-exit port 0xf4: the ELF loader never powers the machine off by
 * itself, and its applications run in ring 0, where `out` is allowed.  QEMU
 * then exits with (status << 1) | 1, which the backend decodes. */
#undef main
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

int labtui_probe_main(int argc, char **argv);

static void power_off(int status, void *arg)
{
    (void)arg;
    fflush(NULL);
    unsigned value = (unsigned)status & 0x7f;
    __asm__ volatile("outl %0, %1" : : "a"(value), "Nd"((unsigned short)0xf4));
}

int main(int argc, char **argv)
{
    on_exit(power_off, NULL);
    fprintf(stderr, "labtui-probe %s: started\n", argv[0]);
    return labtui_probe_main(argc, argv);
}
