/* sqlite: the SQLite worker of the Docker/Unikraft study (sections 4.4 and
 * 5.3): time to run INSERT statements, each in its own transaction, into a
 * fresh database.
 *
 *   sqlite [INSERTS] [DIR]     INSERTS default 60000; DIR default $TMPDIR or
 *                              /tmp (the study used tmpfs: pass /dev/shm)
 *
 * Prints the total time in seconds (lower is better).  The database file is
 * removed at the end.  Needs libsqlite3 to build (Debian: libsqlite3-dev). */
/* labtui-link: -lsqlite3 -lm */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long inserts = argc > 1 ? atol(argv[1]) : 60000;
    const char *dir = argc > 2 ? argv[2] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (inserts <= 0) {
        fprintf(stderr, "usage: sqlite [INSERTS] [DIR]\n");
        return 2;
    }
    char path[4096], *err = NULL;
    /* mkstemp, not the pid: each instance may be pid 1 of its own namespace */
    snprintf(path, sizeof path, "%s/labtui-sqlite-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    close(fd); /* SQLite takes the empty file for a new database */
    sqlite3 *db;
    sqlite3_stmt *insert;
    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db, "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b TEXT)", NULL, NULL, &err) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO t (a, b) VALUES (?, 'labtui')", -1, &insert, NULL) != SQLITE_OK) {
        fprintf(stderr, "sqlite: %s: %s\n", path, err ? err : sqlite3_errmsg(db));
        return 1;
    }
    double start = now_s();
    for (long i = 0; i < inserts; i++) { /* autocommit: one transaction per insert */
        sqlite3_bind_int64(insert, 1, i);
        if (sqlite3_step(insert) != SQLITE_DONE) {
            fprintf(stderr, "sqlite: insert %ld: %s\n", i, sqlite3_errmsg(db));
            return 1;
        }
        sqlite3_reset(insert);
    }
    double elapsed = now_s() - start;
    sqlite3_finalize(insert);
    sqlite3_close(db);
    unlink(path);
    printf("{\"benchmark\":\"sqlite\",\"metric\":\"inserts_%ld_s\",\"value\":%.6g,\"unit\":\"s\",\"better\":\"lower\"}\n",
           inserts, elapsed);
    return 0;
}
