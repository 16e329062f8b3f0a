/*
 * Replays a fuzz target over checked-in corpora, so every corpus file runs
 * as an ordinary test in every build (SQLite's fuzzcheck, h2o's fuzz dir).
 * Usage: replay_<target> DIR...; fails if a directory is missing or holds
 * no files, or if the target crashes (the sanitizers abort).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read a whole file into a new buffer; -1 on error. */
static int read_file(const char *path, uint8_t **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    struct gt_buf b;
    gt_buf_init(&b);
    char chunk[4096];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
        gt_buf_append(&b, chunk, (size_t)n);
    }
    close(fd);
    if (n < 0) {
        gt_buf_fini(&b);
        return -1;
    }
    *len = b.len;
    *out = (uint8_t *)gt_buf_take(&b);
    return 0;
}

static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open %s\n", dir);
        return -1;
    }
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *path = gt_xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            uint8_t *data;
            size_t len;
            if (read_file(path, &data, &len) < 0) {
                fprintf(stderr, "replay: cannot read %s\n", path);
                free(path);
                closedir(d);
                return -1;
            }
            LLVMFuzzerTestOneInput(data, len);
            free(data);
            files++;
        }
        free(path);
    }
    closedir(d);
    if (files == 0) {
        fprintf(stderr, "replay: no inputs in %s\n", dir);
        return -1;
    }
    printf("replay: %d inputs from %s\n", files, dir);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        if (replay_dir(argv[i]) < 0) {
            return 1;
        }
    }
    return 0;
}
