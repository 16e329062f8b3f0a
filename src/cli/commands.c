/*
 * The command table and dispatch of `gantry`.
 *
 * Global flags (--server URL, --token TOKEN, each also as --flag=value) are
 * taken out of argv wherever they appear before "--", as kubectl allows;
 * what remains is COMMAND [ARGS]. One const table lists every command with
 * its usage, summary and options: it drives dispatch, `gantry help` and
 * `gantry COMMAND --help`, so a new command is a handler plus one entry.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

static int cmd_help(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                    char **argv);
static int cmd_completion(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                          char **argv);

static const struct gt_cli_command commands[] = {
    {
        .name = "apply",
        .usage = "apply -f FILE|DIR|- [-R] [-p PROJECT]",
        .summary = "Create or update objects from YAML or JSON documents",
        .options = "  -f, --filename FILE   file to read, - for standard input; a directory:\n"
                   "                        its .yaml, .yml and .json files in name order\n"
                   "  -R, --recursive       and those of its subdirectories\n"
                   "  -p, --project NAME    project for documents that name none (default:\n"
                   "                        the config file's \"project\")\n",
        .run = gt_cli_cmd_apply,
    },
    {
        .name = "get",
        .usage = "get KIND[,KIND...] [NAME] | KIND/NAME [-p PROJECT | -A] [-l SELECTOR] "
                 "[-o FORMAT] [--no-headers] [--show-labels] [--sort-by PATH] [-w]",
        .summary = "List objects, or show one",
        .options = "  -p, --project NAME         project (default: the config file's \"project\")\n"
                   "  -A, --all-projects         every project you may read\n"
                   "  -l, --selector SELECTOR    label selector (a=b,c!=d,e in (x,y))\n"
                   "      --field-selector SEL   field selector (spec.nodeName=n1)\n"
                   "  -o, --output FORMAT        wide, json, yaml, name, jsonpath=TEMPLATE\n"
                   "                             ({.items[*].metadata.name}, {range ...}{end}),\n"
                   "                             custom-columns=HEADER:PATH,...\n"
                   "      --no-headers           tables without their header line\n"
                   "      --show-labels          a LABELS column\n"
                   "      --sort-by PATH         list order by a JSONPath ({.metadata.name})\n"
                   "  -w, --watch                after the list, print changes as they happen\n",
        .run = gt_cli_cmd_get,
    },
    {
        .name = "describe",
        .usage = "describe KIND NAME | KIND/NAME [-p PROJECT]",
        .summary = "Show an object in detail, with its events",
        .options = "  -p, --project NAME    project (default: the config file's \"project\")\n",
        .run = gt_cli_cmd_describe,
    },
    {
        .name = "delete",
        .usage = "delete KIND NAME... | KIND/NAME... | KIND --all | -f FILE|DIR [-R] "
                 "[-p PROJECT]",
        .summary = "Delete objects",
        .options = "  -p, --project NAME    project (default: the config file's \"project\")\n"
                   "      --all             every object of KIND (in the project)\n"
                   "  -f, --filename FILE   the objects a manifest names (a directory: its\n"
                   "                        .yaml, .yml and .json files), - for standard input\n"
                   "  -R, --recursive       and those of its subdirectories\n",
        .run = gt_cli_cmd_delete,
    },
    {
        .name = "run",
        .usage = "run [--gpus N] [--cpu Q] [--memory Q] [--workers N] [-p PROJECT] [--name NAME] "
                 "[--image IMG] [--workdir DIR] [--git URL [--revision R]] [--requirements FILE] "
                 "[--volume NAME:/PATH[:ro]]... -- CMD [ARGS...]",
        .summary = "Run a command as a job, follow its output, exit with its status",
        .options = "  -p, --project NAME    project (default: the config file's \"project\")\n"
                   "      --gpus N          whole GPUs (nvidia.com/gpu limit)\n"
                   "      --cpu Q           CPU limit (2, 500m)\n"
                   "      --memory Q        memory limit (16Gi)\n"
                   "      --name NAME       job name (default: run-<8 hex>)\n"
                   "      --image IMG       container image\n"
                   "      --workdir DIR     the tasks' working directory on the node (a local\n"
                   "                        cluster's node is this machine: --workdir . runs\n"
                   "                        the command beside your files)\n"
                   "      --workers N       distributed: 1 master + N workers, each with "
                   "these limits;\n"
                   "                        the master's output is followed\n"
                   "      --git URL         fetch this repository into the working directory\n"
                   "      --revision R      its branch, tag or commit (default: default branch)\n"
                   "      --requirements F  pip requirements file (read here, installed on the "
                   "node)\n"
                   "      --volume V        mount Volume NAME at /PATH (\":ro\": read-only); "
                   "repeatable\n"
                   "Ctrl-C stops following; the job keeps running.\n",
        .run = gt_cli_cmd_run,
    },
    {
        .name = "logs",
        .usage = "logs JOB|TASK [--replica TYPE-INDEX] [-f] [--tail N] [--previous] [--timestamps] "
                 "[--since DURATION|--since-time TIME] [-p PROJECT]",
        .summary = "Print the log of one of a job's tasks, or of a task",
        .options = "  -p, --project NAME      project (default: the config file's \"project\")\n"
                   "      --replica TYPE-N    which task (worker-1); default master-0, else "
                   "worker-0\n"
                   "  -f, --follow            follow the log until the task ends\n"
                   "      --tail N            only the last N lines\n"
                   "      --previous          the run before the task's last restart\n"
                   "      --timestamps        each line after the time it was written\n"
                   "      --since DURATION    only what was written in the last 30s, 5m, "
                   "1h30m, ...\n"
                   "      --since-time TIME   only what was written from TIME (RFC 3339) on\n",
        .run = gt_cli_cmd_logs,
    },
    {
        .name = "exec",
        .usage = "exec TASK [-p PROJECT] [-i] [-t] -- CMD [ARGS...]",
        .summary = "Run a command inside a running task; exit with its exit code",
        .options = "  -p, --project NAME    project (default: the config file's \"project\")\n"
                   "  -i, --stdin           copy standard input to the command\n"
                   "  -t, --tty             run it on a terminal in the task (this one raw "
                   "meanwhile)\n",
        .run = gt_cli_cmd_exec,
    },
    {
        .name = "mpi-rsh",
        .usage = "mpi-rsh HOST CMD...",
        .summary = "An MPI launcher's rsh agent: run CMD in the job's worker task HOST",
        .options = NULL,
        .run = gt_cli_cmd_mpi_rsh,
    },
    {
        .name = "notebook",
        .usage = "notebook create|open|stop|start|delete NAME [flags]",
        .summary = "Manage Jupyter notebooks: create, print the URL to open, stop (GPUs freed, "
                   "home kept), start, delete",
        .options = "  -p, --project NAME      project (default: the config file's \"project\")\n"
                   "      --gpus N            create: GPUs (nvidia.com/gpu)\n"
                   "      --cpu Q, --memory Q create: CPU and memory limits\n"
                   "      --image IMG         create: an image (default: the node's Jupyter)\n"
                   "      --home VOL          create: the home, a Volume of the project (or an\n"
                   "                          absolute hostPath beneath a storage root)\n",
        .run = gt_cli_cmd_notebook,
    },
    {
        .name = "volume",
        .usage = "volume create NAME --size SIZE [--class CLASS] [--access-mode MODE] "
                 "[--read-only] [-p PROJECT]",
        .summary = "Create a Volume: a disk of SIZE (64Mi) that jobs mount by name",
        .options = "  -p, --project NAME     project (default: the config file's \"project\")\n"
                   "      --size SIZE        capacity, counted against the storage quota\n"
                   "      --class CLASS      storage class (default: the cluster's first)\n"
                   "      --access-mode MODE ReadWriteOnce (default), ReadOnlyMany or "
                   "ReadWriteMany\n"
                   "      --read-only        a dataset: every mount read-only\n",
        .run = gt_cli_cmd_volume,
    },
    {
        .name = "model",
        .usage = "model register NAME (--from-job JOB --path PATH [--task TASK] | --file "
                 "HOSTPATH) [--metric K=V]... [--format sklearn|pytorch] [-p PROJECT] | model "
                 "stage NAME VERSION STAGE",
        .summary = "Register a model version (copied into the model store) or set its stage",
        .options = "  -p, --project NAME  project (default: the config file's \"project\")\n"
                   "      --from-job JOB  register the artifact a Succeeded job wrote...\n"
                   "      --path PATH     ...at PATH as its task saw it (on a hostPath volume)\n"
                   "      --task TASK     the job's task (default: Master/Chief, else the first)\n"
                   "      --file HOSTPATH register a file or directory beneath a storage root\n"
                   "      --metric K=V    a metric of the version (repeatable)\n"
                   "      --format F      sklearn or pytorch (default: the Model's framework; "
                   "creates a missing Model)\n"
                   "STAGE: None, Staging, Production (the model's previous one is Archived) or "
                   "Archived.\n",
        .run = gt_cli_cmd_model,
    },
    {
        .name = "cordon",
        .usage = "cordon NODE",
        .summary = "Mark a node unschedulable: no new tasks are bound to it (admins)",
        .run = gt_cli_cmd_node,
    },
    {
        .name = "uncordon",
        .usage = "uncordon NODE",
        .summary = "Make a cordoned or drained node schedulable again (admins)",
        .run = gt_cli_cmd_node,
    },
    {
        .name = "drain",
        .usage = "drain NODE [--timeout SECONDS]",
        .summary = "Cordon a node and stop its tasks gracefully; their jobs are requeued (admins)",
        .options = "      --timeout SECONDS   wait at most this long for the tasks to end "
                   "(default 120;\n"
                   "                          0: do not wait)\n",
        .run = gt_cli_cmd_node,
    },
    {
        .name = "label",
        .usage = "label node NODE KEY=VALUE... [KEY-...] [--overwrite]",
        .summary = "Set or remove labels of a node, which nodeSelector matches (admins)",
        .options = "      --overwrite   change the value of a label the node has\n",
        .run = gt_cli_cmd_label,
    },
    {
        .name = "taint",
        .usage = "taint node NODE KEY[=VALUE]:EFFECT... [KEY[:EFFECT]-...]",
        .summary = "Add or remove node taints (NoSchedule, PreferNoSchedule, NoExecute) that "
                   "keep off or evict tasks without a toleration (admins)",
        .run = gt_cli_cmd_label,
    },
    {
        .name = "top",
        .usage = "top nodes|jobs",
        .summary = "Show GPU, CPU and memory use per node, or per running job",
        .run = gt_cli_cmd_top,
    },
    {
        .name = "scalars",
        .usage = "scalars JOB [-p PROJECT]",
        .summary = "Show the latest value of each training scalar (TensorBoard) of a job",
        .options = "  -p, --project NAME   the job's project\n",
        .run = gt_cli_cmd_scalars,
    },
    {
        .name = "report",
        .usage = "report usage [--from TIME] [--to TIME] [--by department|project|user|model] "
                 "[-o csv|json]",
        .summary = "GPU-seconds used, from the ledger (as Slurm's sreport)",
        .options = "      --from TIME   start of the window, RFC 3339 (default: the beginning)\n"
                   "      --to TIME     end of the window (default: now)\n"
                   "      --by WHAT     department (default), project, user or model\n"
                   "  -o, --output FMT  csv or json instead of a table\n",
        .run = gt_cli_cmd_report,
    },
    {
        .name = "up",
        .usage = "up [--data-dir DIR] [--fake-gpus SPEC] [--uid N] [--listen ADDR:PORT] "
                 "[--storage-root DIR]... [--prometheus[=ADDR:PORT]] [--ha]",
        .summary = "Start a one-machine cluster (gantryd and gantlet) in the background",
        .options = "      --data-dir DIR       store, tokens, pids, logs (default "
                   "$XDG_DATA_HOME/gantry,\n"
                   "                           else ~/.local/share/gantry)\n"
                   "      --fake-gpus SPEC     fake GPUs for the node (8xA100-80GB)\n"
                   "      --uid N              uid your tasks run as (default: yours; 65534 "
                   "for root)\n"
                   "      --listen ADDR:PORT   gantryd's address (default 127.0.0.1:8443); "
                   "gantlet\n"
                   "                           listens on the next port\n"
                   "      --storage-root DIR   a directory volumes (hostPath) may come from; "
                   "repeatable\n"
                   "      --prometheus[=ADDR:PORT]  also run Prometheus (default "
                   "127.0.0.1:9090)\n"
                   "                           scraping gantryd and gantlet "
                   "(docs/metrics.md)\n"
                   "      --ha                 a 3-member etcd and 3 gantryd replicas "
                   "(docs/ha.md),\n"
                   "                           all three in the config and the agent's "
                   "--server\n",
        .run = gt_cli_cmd_up,
    },
    {
        .name = "down",
        .usage = "down [--data-dir DIR]",
        .summary = "Stop the local cluster: its running tasks, then gantlet and gantryd",
        .options = "      --data-dir DIR   as given to 'gantry up'\n",
        .run = gt_cli_cmd_down,
    },
    {
        .name = "explain",
        .usage = "explain KIND[.FIELD[.FIELD...]]",
        .summary = "Describe a kind or one of its fields: type, description, fields",
        .run = gt_cli_cmd_explain,
    },
    {
        .name = "version",
        .usage = "version [--client]",
        .summary = "Show the CLI's version and the server's",
        .options = "      --client          the CLI's only; do not ask the server\n",
        .run = gt_cli_cmd_version,
    },
    {
        .name = "completion",
        .usage = "completion bash|zsh",
        .summary = "Print a shell completion script (source <(gantry completion bash))",
        .run = cmd_completion,
    },
    {
        .name = "help",
        .usage = "help [COMMAND]",
        .summary = "Show help for gantry or one command",
        .run = cmd_help,
    },
};

static const char global_help[] =
    "Global flags:\n"
    "  --server URL     gantryd address (else $GANTRY_SERVER, else the config file)\n"
    "  --token TOKEN    bearer token (else $GANTRY_TOKEN, else the config file)\n"
    "The config file is $GANTRY_CONFIG, else $XDG_CONFIG_HOME/gantry/config or\n"
    "~/.config/gantry/config: JSON {\"server\": URL, \"token\": TOKEN}.\n"
    "`gantry up` writes it, with \"project\": \"default\" for run and logs.\n"
    "Kinds: departments (dept), projects (proj), priorityclasses (pc), nodes (no),\n"
    "jobs, tasks, events (ev), volumes (vol), models, modelversions (mv).\n";

static const struct gt_cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(commands); i++) {
        if (strcmp(commands[i].name, name) == 0) {
            return &commands[i];
        }
    }
    return NULL;
}

static void print_overview(FILE *f)
{
    fprintf(f, "gantry: command-line client of the gantry GPU cluster manager\n\n"
               "Usage: gantry [--server URL] [--token TOKEN] COMMAND [ARGS]\n\nCommands:\n");
    for (size_t i = 0; i < GT_ARRAY_LEN(commands); i++) {
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    }
    fprintf(f, "\n%s\nRun 'gantry help COMMAND' for a command's flags.\n", global_help);
}

static void print_command_help(FILE *f, const struct gt_cli_command *cmd)
{
    fprintf(f, "%s\n\nUsage: gantry %s\n", cmd->summary, cmd->usage);
    if (cmd->options) {
        fprintf(f, "\nOptions:\n%s", cmd->options);
    }
    fprintf(f, "\n%s", global_help);
}

static int cmd_help(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv)
{
    if (argc > 2) {
        return gt_cli_usage_error(ctx, cmd, "too many arguments");
    }
    if (argc == 2) {
        const struct gt_cli_command *c = find_command(argv[1]);
        if (!c) {
            return gt_cli_usage_error(ctx, cmd, "unknown command \"%s\"", argv[1]);
        }
        print_command_help(ctx->out, c);
        return 0;
    }
    print_overview(ctx->out);
    return 0;
}

/* `gantry completion bash|zsh`, as kubectl has it: a script completing
 * command names from the table and kinds (plural names) after get,
 * describe, delete and explain; zsh's runs it through bashcompinit. */
static int cmd_completion(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                          char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "bash") && strcmp(argv[1], "zsh"))) {
        return gt_cli_usage_error(
            ctx, cmd, argc < 2 ? "name a shell: bash or zsh" : "shell: want bash or zsh");
    }
    FILE *f = ctx->out;
    if (!strcmp(argv[1], "zsh")) {
        fprintf(f, "#compdef gantry\nautoload -U +X bashcompinit && bashcompinit\n");
    }
    fprintf(f, "_gantry() {\n    local cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
               "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n        COMPREPLY=($(compgen -W \"");
    for (size_t i = 0; i < GT_ARRAY_LEN(commands); i++) {
        fprintf(f, "%s%s", i ? " " : "", commands[i].name);
    }
    fprintf(f, "\" -- \"$cur\"))\n        return\n    fi\n"
               "    case \"${COMP_WORDS[1]}\" in\n    get|describe|delete|explain)\n"
               "        if [ \"$COMP_CWORD\" -eq 2 ]; then\n"
               "            COMPREPLY=($(compgen -W \"");
    for (int k = 0; k < GT_KIND_COUNT; k++) {
        fprintf(f, "%s%s", k ? " " : "", gt_kind_get((enum gt_kind)k)->plural);
    }
    fprintf(f, "\" -- \"$cur\"))\n        fi\n        ;;\n    completion)\n"
               "        COMPREPLY=($(compgen -W \"bash zsh\" -- \"$cur\"))\n        ;;\n"
               "    esac\n}\ncomplete -F _gantry gantry\n");
    return 0;
}

int gt_cli_exit_status(int rc, int task_status)
{
    GT_ASSERT(rc <= 0 && task_status >= 0 && task_status <= 255);
    switch (rc) {
    case 0:
        return task_status;
    case GT_EUSAGE:
        return 2;
    case -ECANCELED:
        return 130;
    default:
        return 1;
    }
}

/* If argv[*i] is global flag `name` (as "--name V" or "--name=V"), store its
 * value, advance *i past it and return 1; 0 if it is not; -1 if the value
 * is missing. */
static int take_global(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) {
        return 0;
    }
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0') {
        return 0;
    }
    if (*i + 1 >= argc) {
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

/* Move global flags out of argv (in place, keeping order) into ctx. Returns
 * the new argc, or -1 after a usage error. */
static int strip_globals(struct gt_cli_ctx *ctx, int argc, char **argv)
{
    int out = 1;
    bool past_dashes = false;
    for (int i = 1; i < argc; i++) {
        int r = 0;
        if (!past_dashes) {
            past_dashes = strcmp(argv[i], "--") == 0;
            r = take_global(argc, argv, &i, "--server", &ctx->server_flag);
            if (r == 0) {
                r = take_global(argc, argv, &i, "--token", &ctx->token_flag);
            }
        }
        if (r < 0) {
            gt_cli_usage_error(ctx, NULL, "flag %s needs a value", argv[i]);
            return -1;
        }
        if (r == 0) {
            argv[out++] = argv[i];
        }
    }
    argv[out] = NULL;
    return out;
}

static bool wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            return true;
        }
    }
    return false;
}

/* Find argv's command and run it: 0 or its code, reported. Called by the
 * name GT_MPI_RSH_AGENT (a link to gantry), gantry is `gantry mpi-rsh`,
 * whose arguments (the remote daemon's command line) are passed as they
 * are. */
static int dispatch(struct gt_cli_ctx *ctx, int argc, char **argv)
{
    const char *prog = strrchr(argv[0], '/');
    if (!strcmp(prog ? prog + 1 : argv[0], GT_MPI_RSH_AGENT)) {
        return gt_cli_cmd_mpi_rsh(ctx, find_command("mpi-rsh"), argc, argv);
    }
    argc = strip_globals(ctx, argc, argv);
    if (argc < 0) {
        return GT_EUSAGE;
    }
    if (argc < 2) {
        print_overview(ctx->err);
        return GT_EUSAGE;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        print_overview(ctx->out);
        return 0;
    }
    const struct gt_cli_command *cmd = find_command(argv[1]);
    if (!cmd) {
        return gt_cli_usage_error(ctx, NULL, "unknown command \"%s\"", argv[1]);
    }
    if (wants_help(argc - 1, argv + 1)) {
        print_command_help(ctx->out, cmd);
        return 0;
    }
    return cmd->run(ctx, cmd, argc - 1, argv + 1);
}

int gt_cli_main(int argc, char **argv, FILE *out, FILE *err)
{
    struct gt_cli_ctx ctx = {.out = out, .err = err};
    int rc = dispatch(&ctx, argc, argv);
    gt_cli_client_free(ctx.client);
    free(ctx.default_project);
    fflush(out);
    return gt_cli_exit_status(rc, ctx.task_status);
}
