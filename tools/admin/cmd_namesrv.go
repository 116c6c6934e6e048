package admin

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rocketraft/rocketraft/client"
)

// The name server commands (RocketMQ's tools/command/namesrv): each asks every name server of -n in turn and
// reports each; one that fails is reported and the others are still asked (exit status 1).

// eachNamesrv calls fn for every name server, going on after a failure.
func (r *runner) eachNamesrv(fn func(ns string) error) error {
	nss := r.c.Namesrvs()
	if len(nss) == 0 {
		return client.ErrNoNamesrv
	}
	var errs []error
	for _, ns := range nss {
		if err := fn(ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// eachNamesrvDone is eachNamesrv returning the name servers fn succeeded on.
func (r *runner) eachNamesrvDone(fn func(ns string) error) ([]string, error) {
	done := []string{}
	err := r.eachNamesrv(func(ns string) error {
		err := fn(ns)
		if err == nil {
			done = append(done, ns)
		}
		return err
	})
	return done, err
}

// writePermRow is one name server's answer to wipeWritePerm or addWritePerm.
type writePermRow struct {
	Namesrv string `json:"namesrv"`
	Topics  int    `json:"topics"`
	Failed  string `json:"error,omitempty"`
}

type writePermResult struct {
	Broker string         `json:"brokerName"`
	Rows   []writePermRow `json:"namesrvs"`
	verb   string         // wipe or add
}

func (r *writePermResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, x := range r.Rows {
		if x.Failed != "" {
			t.printf("%s write perm of broker[%s] in name server[%s] Failed\n", r.verb, r.Broker, x.Namesrv)
			continue
		}
		t.printf("%s write perm of broker[%s] in name server[%s] OK, %d\n", r.verb, r.Broker, x.Namesrv, x.Topics)
	}
	return t.err
}

func writePermCmd(name, desc, verb string, allow bool) *command {
	return &command{name: name, desc: desc, setup: func(f *flags) runFunc {
		var broker string
		f.String(&broker, "b", "brokerName", "broker name", true)
		return func(ctx context.Context, r *runner) (result, error) {
			res := &writePermResult{Broker: broker, Rows: []writePermRow{}, verb: verb}
			err := r.eachNamesrv(func(ns string) error {
				n, err := r.c.SetBrokerWritePerm(ctx, ns, broker, allow)
				row := writePermRow{Namesrv: ns, Topics: n}
				if err != nil {
					row.Failed = err.Error()
				}
				res.Rows = append(res.Rows, row)
				return err
			})
			return res, err
		}
	}}
}

func wipeWritePermCmd() *command {
	return writePermCmd("wipeWritePerm", "Wipe write perm of broker in all name server you defined in the -n param.", "wipe", false)
}

func addWritePermCmd() *command {
	return writePermCmd("addWritePerm", "Add write perm of broker in all name server you defined in the -n param.", "add", true)
}

// namesrvConfigResult is getNamesrvConfig's answer: each name server's config.
type namesrvConfigResult struct {
	Namesrvs []brokerKV `json:"namesrvs"`
}

func (r *namesrvConfigResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, n := range r.Namesrvs {
		t.printf("============%s============\n", n.Addr)
		for _, k := range sortedKeys(n.Table) {
			t.printf("%-50s=  %s\n", k, n.Table[k])
		}
	}
	return t.err
}

func getNamesrvConfigCmd() *command {
	return &command{name: "getNamesrvConfig", desc: "Get configs of name server.", setup: func(f *flags) runFunc {
		return func(ctx context.Context, r *runner) (result, error) {
			res := &namesrvConfigResult{Namesrvs: []brokerKV{}}
			err := r.eachNamesrv(func(ns string) error {
				body, err := r.c.NamesrvConfig(ctx, ns)
				if err == nil {
					res.Namesrvs = append(res.Namesrvs, brokerKV{Addr: ns, Table: parseProperties(body)})
				}
				return err
			})
			return res, err
		}
	}}
}

// kvResult is a fixed text after a change (updateNamesrvConfig, updateKvConfig, deleteKvConfig).
type kvResult struct {
	Namesrvs []string `json:"namesrvs"`
	Key      string   `json:"key"`
	Value    string   `json:"value,omitempty"`
	text     string
}

func (r *kvResult) writeText(w io.Writer) error {
	_, err := io.WriteString(w, r.text)
	return err
}

func updateNamesrvConfigCmd() *command {
	return &command{name: "updateNamesrvConfig", desc: "Update configs of name server.", setup: func(f *flags) runFunc {
		var key, value string
		f.String(&key, "k", "key", "config key", true)
		f.String(&value, "v", "value", "config value", true)
		return func(ctx context.Context, r *runner) (result, error) {
			res := &kvResult{Key: key, Value: value}
			body := []byte(propertiesLine(key, value))
			var err error
			res.Namesrvs, err = r.eachNamesrvDone(func(ns string) error { return r.c.UpdateNamesrvConfig(ctx, ns, body) })
			res.text = fmt.Sprintf("update name server config success!%v\n%s : %s\n", res.Namesrvs, key, value)
			if err != nil {
				return nil, err
			}
			return res, nil
		}
	}}
}

func updateKvConfigCmd() *command {
	return &command{name: "updateKvConfig", desc: "Create or update KV config.", setup: func(f *flags) runFunc {
		var namespace, key, value string
		f.String(&namespace, "s", "namespace", "set the namespace", true)
		f.String(&key, "k", "key", "set the key name", true)
		f.String(&value, "v", "value", "set the key value", true)
		return func(ctx context.Context, r *runner) (result, error) {
			res := &kvResult{Key: key, Value: value, text: "create or update kv config to namespace success.\n"}
			var err error
			res.Namesrvs, err = r.eachNamesrvDone(func(ns string) error { return r.c.PutKVConfig(ctx, ns, namespace, key, value) })
			if err != nil {
				return nil, err
			}
			return res, nil
		}
	}}
}

func deleteKvConfigCmd() *command {
	return &command{name: "deleteKvConfig", desc: "Delete KV config.", setup: func(f *flags) runFunc {
		var namespace, key string
		f.String(&namespace, "s", "namespace", "set the namespace", true)
		f.String(&key, "k", "key", "set the key name", true)
		return func(ctx context.Context, r *runner) (result, error) {
			res := &kvResult{Key: key, text: "delete kv config from namespace success.\n"}
			var err error
			res.Namesrvs, err = r.eachNamesrvDone(func(ns string) error { return r.c.DeleteKVConfig(ctx, ns, namespace, key) })
			if err != nil {
				return nil, err
			}
			return res, nil
		}
	}}
}
