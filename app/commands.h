/* commands.h - the sluice subcommands. Each takes the arguments after its
 * name (argv[0] is the subcommand name) and returns the process exit code.
 * app/ is the only layer that prints for the user and decides to exit. */
#ifndef SL_APP_COMMANDS_H
#define SL_APP_COMMANDS_H

int cmd_inspect(int argc, char **argv);
int cmd_mkmodel(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_iobench(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
