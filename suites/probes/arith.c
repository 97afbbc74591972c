/* arith: integer and floating-point arithmetic throughput, in the manner of
 * AIM9's add/mul/div tests and UnixBench's arithmetic loops.
 *
 *   arith int|double [SECONDS]
 *   arith OP_TYPE [SECONDS]    OP: add mul div; TYPE: int long float double
 *   arith aim9 [SECONDS]       all twelve OP_TYPE tests, SECONDS each, in turn
 *
 * int, double: a dependent chain of add, multiply and divide on 64-bit
 * integers (int) or doubles (double), counted together: int_mops,
 * double_mops (the figure the concurrent-instance suites sum).
 *
 * OP_TYPE: one operation on one C type, as AIM9's add_int ... div_double
 * (study 000, Tables 5-3 and 5-4: additions, divides and multiplies of int,
 * long, float and double, each its own column): a dependent chain of that
 * operation alone, its operands read from volatile variables so that the
 * compiler can neither fold the chain nor turn a divide into a multiply.  int
 * is 32 bits, long 64; integer adds and multiplies wrap (unsigned), integer
 * divides are signed, as AIM9's.  Prints <op>_<type>_mops.  aim9 prints the
 * twelve lines, add, mul, div of int, long, float, double.
 *
 * Millions of operations per second over SECONDS (higher is better). */
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

#define ROUNDS 4096 /* int, double: each round 1 add, 1 multiply, 1 divide, 1 add */
#define CHAIN 8192  /* OP_TYPE: operations per call */

static long long int_rounds(volatile long long *seed)
{
    long long a = *seed, b = 7;
    for (int i = 0; i < ROUNDS; i++) {
        a = a + b;
        b = a * 3 + 1;
        a = b / 5 + i;
    }
    *seed = a;
    return ROUNDS * 4LL;
}

static long long double_rounds(volatile double *seed)
{
    double a = *seed, b = 1.5;
    for (int i = 0; i < ROUNDS; i++) {
        a = a + b;
        b = a * 1.0000001 + 0.5;
        a = b / 1.0000003 + 1e-9;
    }
    *seed = a;
    return ROUNDS * 4LL;
}

/* ---- one operation on one type ---- */

/* Operands the compiler cannot see: read once per call from volatiles. */
static volatile unsigned odd_a = 3, odd_b = 5;
static volatile int div_base = 1000000, div_by = 3;
static volatile float f_up = 1.0000001f, f_down = 0.9999999f, f_plus = 0.5f, f_minus = -0.5f;
static volatile double d_up = 1.0000001, d_down = 0.9999999, d_plus = 0.5, d_minus = -0.5;
static volatile double sink;

/* Integer add and multiply: a, b feed each other (a += b; b += a), so no closed form exists. */
#define INTEGER_CHAIN(name, type, op)                          \
    static __attribute__((noinline)) long long name(void)      \
    {                                                          \
        type a = (type)odd_a, b = (type)odd_b;                 \
        for (int i = 0; i < CHAIN / 2; i++) {                  \
            a = a op b;                                        \
            b = b op a;                                        \
        }                                                      \
        sink = (double)(a ^ b);                                \
        return CHAIN;                                          \
    }
/* Integer divide: a = (base + a) / by, signed; the add is the loop's, the divide the figure's. */
#define INTEGER_DIVIDE(name, type)                             \
    static __attribute__((noinline)) long long name(void)      \
    {                                                          \
        type a = 1, base = (type)div_base, by = (type)div_by;  \
        for (int i = 0; i < CHAIN; i++)                        \
            a = (base + a) / by;                               \
        sink = (double)a;                                      \
        return CHAIN;                                          \
    }
/* Floating point: two operations a round that undo each other (x then 1/x, +h then -h), so the value
 * stays normal; without -ffast-math the compiler may not reassociate them away. */
#define FLOAT_CHAIN(name, type, op, first, second)             \
    static __attribute__((noinline)) long long name(void)      \
    {                                                          \
        type a = 1, x = first, y = second;                     \
        for (int i = 0; i < CHAIN / 2; i++) {                  \
            a = a op x;                                        \
            a = a op y;                                        \
        }                                                      \
        sink = (double)a;                                      \
        return CHAIN;                                          \
    }

INTEGER_CHAIN(add_int, unsigned, +)
INTEGER_CHAIN(add_long, unsigned long long, +)
INTEGER_CHAIN(mul_int, unsigned, *)
INTEGER_CHAIN(mul_long, unsigned long long, *)
INTEGER_DIVIDE(div_int, int)
INTEGER_DIVIDE(div_long, long long)
FLOAT_CHAIN(add_float, float, +, f_plus, f_minus)
FLOAT_CHAIN(add_double, double, +, d_plus, d_minus)
FLOAT_CHAIN(mul_float, float, *, f_up, f_down)
FLOAT_CHAIN(mul_double, double, *, d_up, d_down)
FLOAT_CHAIN(div_float, float, /, f_up, f_down)
FLOAT_CHAIN(div_double, double, /, d_up, d_down)

static const struct test {
    const char *name;
    long long (*run)(void);
} tests[] = {
    {"add_int", add_int},       {"add_long", add_long},     {"add_float", add_float},
    {"add_double", add_double}, {"mul_int", mul_int},       {"mul_long", mul_long},
    {"mul_float", mul_float},   {"mul_double", mul_double}, {"div_int", div_int},
    {"div_long", div_long},     {"div_float", div_float},   {"div_double", div_double},
};
#define TESTS (sizeof tests / sizeof *tests)

static void print_mops(const char *name, long long ops, double elapsed)
{
    printf("{\"benchmark\":\"arith\",\"metric\":\"%s_mops\",\"value\":%.6g,\"unit\":\"Mops/s\",\"better\":\"higher\"}\n",
           name, (double)ops / elapsed / 1e6);
    fflush(stdout);
}

static void run_test(const struct test *test, double seconds)
{
    long long ops = 0;
    double start = now_s(), elapsed;
    do {
        ops += test->run();
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    print_mops(test->name, ops, elapsed);
}

static int usage(void)
{
    fprintf(stderr, "usage: arith int|double [SECONDS]\n"
                    "       arith aim9|OP_TYPE [SECONDS]  (OP: add mul div; TYPE: int long float double)\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "int";
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    if (seconds <= 0 || argc > 3)
        return usage();
    if (!strcmp(mode, "aim9")) {
        for (size_t i = 0; i < TESTS; i++)
            run_test(&tests[i], seconds);
        return 0;
    }
    for (size_t i = 0; i < TESTS; i++)
        if (!strcmp(mode, tests[i].name)) {
            run_test(&tests[i], seconds);
            return 0;
        }
    int is_int = !strcmp(mode, "int");
    if (!is_int && strcmp(mode, "double"))
        return usage();
    volatile long long iseed = 3;
    volatile double dseed = 1.0;
    long long ops = 0;
    double start = now_s(), elapsed;
    do {
        ops += is_int ? int_rounds(&iseed) : double_rounds(&dseed);
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    print_mops(mode, ops, elapsed);
    return 0;
}
