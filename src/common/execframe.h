/*
 * execframe: the frames of a streaming exec (docs/api.md "Exec"), after
 * Kubernetes' v4.channel.k8s.io: each frame is a channel byte, the
 * payload's length (4 bytes, big-endian) and the payload. The stream is an
 * HTTP/1.1 connection upgraded to GT_EXEC_PROTOCOL, from the CLI through
 * gantryd (a plain byte pipe) to the node's agent.
 */
#ifndef GT_COMMON_EXECFRAME_H
#define GT_COMMON_EXECFRAME_H

#include <stddef.h>
#include <stdint.h>

#define GT_EXEC_PROTOCOL "v4.channel.gantry.dev"

enum gt_exec_channel {
    GT_EXEC_STDIN = 0,  /* client to command; an empty frame: end of input */
    GT_EXEC_STDOUT = 1, /* with a terminal, stdout and stderr are this one */
    GT_EXEC_STDERR = 2,
    GT_EXEC_STATUS = 3, /* the last frame: {"status","exitCode"[,"message"]} */
    GT_EXEC_RESIZE = 4, /* client to agent: {"Width": COLUMNS, "Height": ROWS} */
};

enum { GT_EXEC_HEAD = 5, GT_EXEC_FRAME_MAX = 1 << 20 };

/* Write the head of a frame of channel ch with len payload bytes to h. */
void gt_exec_frame_head(uint8_t h[GT_EXEC_HEAD], int ch, size_t len);
/* The payload length of the frame whose head is h (its channel is h[0]). */
size_t gt_exec_frame_len(const uint8_t h[GT_EXEC_HEAD]);

#endif
