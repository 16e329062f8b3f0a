/*
 * TensorBoard event reader throughput (bench/tfevents.sh): the real event
 * files of ../shared/fixtures/tfevents concatenated (a TFRecord stream stays
 * one when concatenated) until FILE holds at least MIB MiB, then read whole
 * by gt_tfev_file_poll from the page cache, as gantlet would read a task's
 * log directory. Prints "MB_PER_S POINTS_PER_S MIB POINTS" for one run.
 * Usage: tfevents_bench FILE MIB FIXTURE...
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: tfevents_bench FILE MIB FIXTURE...\n");
        return 2;
    }
    gt_log_set_level(GT_LOG_ERROR);
    size_t target = (size_t)strtoul(argv[2], NULL, 10) << 20;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    size_t total = 0;
    while (total < target) {
        for (int i = 3; i < argc; i++) {
            char *data;
            size_t len;
            struct gt_err err = {0};
            if (gt_file_read(argv[i], 1u << 20, &data, &len, &err) != 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
            if (write(fd, data, len) != (ssize_t)len) {
                perror("write");
                return 1;
            }
            total += len;
            free(data);
        }
    }
    close(fd);
    struct gt_tfev_file f;
    gt_tfev_file_init(&f, argv[1]);
    struct gt_tfev_points pts = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct gt_err err = {0};
    if (gt_tfev_file_poll(&f, total, &pts, &err) != 0 || f.offset != (int64_t)total ||
        f.reader.n_corrupt) {
        fprintf(stderr, "read %lld of %zu bytes: %s\n", (long long)f.offset, total, err.msg);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%.0f %.0f %zu %zu\n", (double)total / 1e6 / s, (double)pts.n / s, total >> 20, pts.n);
    GT_VEC_FREE(&pts);
    gt_tfev_file_fini(&f);
    unlink(argv[1]);
    return 0;
}
