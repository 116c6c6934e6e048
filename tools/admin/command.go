package admin

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/client"
)

// Env is what a run of mqadmin needs from its process: output streams, the environment and a logger.
type Env struct {
	Stdout, Stderr io.Writer
	// Getenv reads NAMESRV_ADDR and ROCKETMQ_HOME; nil reads nothing.
	Getenv func(string) string
	// Logger receives the remoting client's logs; nil discards them.
	Logger *slog.Logger
}

// command is one mqadmin subcommand. setup registers its options on f and returns the function that runs
// it once the options are parsed.
type command struct {
	name  string
	desc  string
	setup func(f *flags) runFunc
	// aclKeys: the command's own -a/--accessKey and -s/--secretKey name an ACL account (updateAclConfig), so
	// the common --accessKey/--secretKey are not registered; it signs with --toolsConfig or tools.yml only.
	aclKeys bool
}

// runFunc runs a command and returns the result to print (text, or JSON with --json). With an error it may
// still return what succeeded, which is printed before the error is reported.
type runFunc = func(ctx context.Context, r *runner) (result, error)

// result is what a command prints: writeText writes the RocketMQ-style text; --json prints the value itself
// as JSON instead.
type result interface {
	writeText(w io.Writer) error
}

// commands is the table of subcommands, in the order help lists them (the Raft ones: raft.go).
func commands() []*command {
	return []*command{
		updateTopicCmd(), deleteTopicCmd(), topicListCmd(), topicRouteCmd(), topicStatusCmd(),
		updateTopicPermCmd(), topicClusterListCmd(), updateOrderConfCmd(),
		clusterListCmd(), brokerStatusCmd(), getBrokerConfigCmd(), updateBrokerConfigCmd(),
		consumerProgressCmd(), consumerConnectionCmd(), producerConnectionCmd(),
		updateSubGroupCmd(), deleteSubGroupCmd(), resetOffsetByTimeCmd(),
		consumerStatusCmd(), getConsumerConfigCmd(), skipAccumulatedMessageCmd(), cloneGroupOffsetCmd(),
		statsAllCmd(), brokerConsumeStatsCmd(), sendMsgStatusCmd(), clusterRTCmd(),
		queryMsgByIdCmd(), queryMsgByKeyCmd(), queryMsgByOffsetCmd(), sendMessageCmd(), consumeMessageCmd(), queryMsgTraceByIdCmd(),
		queryMsgByUniqueKeyCmd(), printMsgCmd(), printMsgByQueueCmd(), queryCqCmd(),
		cleanExpiredCQCmd(), deleteExpiredCommitLogCmd(), cleanUnusedTopicCmd(),
		wipeWritePermCmd(), addWritePermCmd(), getNamesrvConfigCmd(), updateNamesrvConfigCmd(),
		updateKvConfigCmd(), deleteKvConfigCmd(),
		exportMetadataCmd(), exportConfigsCmd(), importMetadataCmd(),
		updateAclConfigCmd(), deleteAclConfigCmd(), getAclConfigCmd(), updateGlobalWhiteAddrCmd(),
		clusterAclConfigVersionCmd(),
		consoleCmd(), getRaftStatusCmd(), transferLeadershipCmd(), addRaftPeerCmd(), removeRaftPeerCmd(),
	}
}

func findCommand(name string) *command {
	for _, c := range commands() {
		if strings.EqualFold(c.name, name) {
			return c
		}
	}
	return nil
}

// common holds the options every command takes.
type common struct {
	namesrv     string
	json        bool
	accessKey   string
	secretKey   string
	toolsConfig string
	timeout     time.Duration
	help        bool
}

func (c *common) register(f *flags, aclKeys bool) {
	f.String(&c.namesrv, "n", "namesrvAddr", "name servers, host:port;host:port (default $NAMESRV_ADDR)", false)
	f.Switch(&c.json, "", "json", "print the result as JSON")
	if !aclKeys {
		f.String(&c.accessKey, "", "accessKey", "ACL access key (with --secretKey)", false)
		f.String(&c.secretKey, "", "secretKey", "ACL secret key (with --accessKey)", false)
	}
	f.String(&c.toolsConfig, "", "toolsConfig",
		"YAML file with accessKey and secretKey (default $ROCKETMQ_HOME/conf/tools.yml when it exists)", false)
	f.Duration(&c.timeout, "", "timeout", "timeout of each request")
	f.Switch(&c.help, "h", "help", "print this help")
}

// Exit statuses of Run.
const (
	ExitOK      = 0 // the command did what it was asked
	ExitFailed  = 1 // the command failed (unreachable server, refused request, partial failure)
	ExitBadArgs = 2 // bad command line
)

const defaultTimeout = 5 * time.Second

// Run runs mqadmin with argv (without the program name) and returns the exit status. A failure is reported
// as one line on env.Stderr: "mqadmin <command>: <reason>".
func Run(ctx context.Context, argv []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	if len(argv) == 0 {
		writeCommandList(env.Stdout)
		return ExitOK
	}
	switch argv[0] {
	case "help", "-h", "--help":
		if len(argv) == 1 {
			writeCommandList(env.Stdout)
			return ExitOK
		}
		c := findCommand(argv[1])
		if c == nil {
			return fail(env, "help", unknownCommand(argv[1]), ExitBadArgs)
		}
		f, _ := c.flags()
		c.setup(f)
		writeCommandHelp(env.Stdout, c, f)
		return ExitOK
	}
	c := findCommand(argv[0])
	if c == nil {
		return fail(env, argv[0], unknownCommand(argv[0]), ExitBadArgs)
	}
	f, com := c.flags()
	run := c.setup(f)
	if err := f.parse(argv[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeCommandHelp(env.Stdout, c, f)
			return ExitOK
		}
		return fail(env, c.name, err, ExitBadArgs)
	}
	if com.help {
		writeCommandHelp(env.Stdout, c, f)
		return ExitOK
	}
	r, err := newRunner(com, f, env)
	if err != nil {
		return fail(env, c.name, err, ExitBadArgs)
	}
	defer r.close()
	res, err := run(ctx, r)
	if res != nil && !isNil(res) {
		if werr := writeResult(env.Stdout, res, com.json); werr != nil && err == nil {
			err = fmt.Errorf("write output: %w", werr)
		}
	}
	if err != nil {
		if errors.Is(err, client.ErrNoNamesrv) {
			err = errNoNamesrv
		}
		code := ExitFailed
		var ue *usageError
		if errors.As(err, &ue) {
			code = ExitBadArgs
		}
		return fail(env, c.name, err, code)
	}
	return ExitOK
}

// isNil reports whether a result is a typed nil pointer (a command returning (*x)(nil), err).
func isNil(res result) bool {
	v := reflect.ValueOf(res)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// flags builds the command's option set, common options included.
func (c *command) flags() (*flags, *common) {
	f := newFlags(c.name)
	com := &common{timeout: defaultTimeout}
	com.register(f, c.aclKeys)
	return f, com
}

func writeResult(w io.Writer, res result, asJSON bool) error {
	if !asJSON {
		return res.writeText(w)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(res)
}

// fail prints the one-line reason and returns code.
func fail(env Env, name string, err error, code int) int {
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	fmt.Fprintf(env.Stderr, "mqadmin %s: %s\n", name, msg)
	return code
}

func unknownCommand(name string) error {
	if why, ok := plannedCommands[strings.ToLower(name)]; ok {
		return usagef("%s is not available: %s", name, why)
	}
	return usagef("the sub command %s does not exist (mqadmin help lists the commands)", name)
}

func writeCommandList(w io.Writer) {
	fmt.Fprintf(w, "The most commonly used mqadmin commands are:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "   %-35s %s\n", c.name, c.desc)
	}
	if len(plannedCommands) > 0 {
		fmt.Fprintf(w, "\nNot available yet:\n")
		names := make([]string, 0, len(plannedCommands))
		for n := range plannedCommands {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(w, "   %-35s %s\n", plannedNames[n], plannedCommands[n])
		}
	}
	fmt.Fprintf(w, "\nSee 'mqadmin help <command>' for more information on a specific command.\n")
}

func writeCommandHelp(w io.Writer, c *command, f *flags) {
	fmt.Fprintf(w, "usage: mqadmin %s [options]\n%s\n\n", c.name, c.desc)
	writeHelp(w, f.specs)
}
