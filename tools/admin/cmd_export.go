package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// exportMetadata and exportConfigs (RocketMQ's tools/command/export), and importMetadata, ours, which
// creates what an export holds on other brokers: a migration's second half.

// defaultExportPath is RocketMQ's export folder.
const defaultExportPath = "/tmp/rocketmq/export"

// systemGroups are RocketMQ's built-in consumer groups (MixAll.isSysConsumerGroup and the fixed set), which an
// export leaves out.
var systemGroups = map[string]bool{"TOOLS_CONSUMER": true, "FILTERSRV_CONSUMER": true, "SELF_TEST_C_GROUP": true,
	"CID_ONS-HTTP-PROXY": true, "CID_ONSAPI_PERMISSION": true, "CID_ONSAPI_OWNER": true, "CID_ONSAPI_PULL": true,
	"CID_RMQ_SYS_TRANS": true}

// userTopic reports whether an export keeps topic: not a system topic (RocketMQ's built-in topics, the rmq_sys_ /
// RMQ_SYS_ topics and the topics named after a cluster or a broker, which every broker has), and a retry or
// dead-letter topic only with special.
func userTopic(topic string, special bool, ci *protocol.ClusterInfo) bool {
	if protocol.SystemTopics[topic] || protocol.HasSystemTopicPrefix(topic) {
		return false
	}
	if _, ok := ci.ClusterAddrTable[topic]; ok {
		return false
	}
	if _, ok := ci.BrokerAddrTable[topic]; ok {
		return false
	}
	if strings.HasPrefix(topic, retryTopicPrefix) || strings.HasPrefix(topic, dlqTopicPrefix) {
		return special
	}
	return true
}

func userGroup(g string) bool { return !systemGroups[g] && !strings.HasPrefix(g, "CID_RMQ_SYS_") }

// metadataFile is exportMetadata's metadata.json (and what importMetadata reads): RocketMQ's shape.
type metadataFile struct {
	TopicConfigTable       map[string]*protocol.TopicConfig             `json:"topicConfigTable,omitempty"`
	SubscriptionGroupTable map[string]*protocol.SubscriptionGroupConfig `json:"subscriptionGroupTable,omitempty"`
	ExportTime             int64                                        `json:"exportTime,omitempty"`
}

type exportResult struct {
	Path   string `json:"path"`
	Topics int    `json:"topics"`
	Groups int    `json:"groups"`
}

func (r *exportResult) writeText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "export %s success\n", r.Path)
	return err
}

// writeJSONFile writes v as indented JSON to dir/name, making dir.
func writeJSONFile(dir, name string, v any) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, append(data, '\n'), 0o644)
}

func exportMetadataCmd() *command {
	return &command{name: "exportMetadata", desc: "Export metadata.", setup: func(f *flags) runFunc {
		dir := defaultExportPath
		var topicsOnly, groupsOnly, special bool
		target := chooseBrokers(f, "choose a broker to export", "choose a cluster to export")
		f.String(&dir, "f", "filePath", "export metadata.json path", false)
		f.Switch(&topicsOnly, "t", "topic", "only export topic metadata")
		f.Switch(&groupsOnly, "g", "subscriptionGroup", "only export subscriptionGroup metadata")
		f.Switch(&special, "s", "specialTopic", "need retryTopic and dlqTopic")
		return func(ctx context.Context, r *runner) (result, error) {
			if topicsOnly && groupsOnly {
				return nil, usagef("give only one of -t (--topic) or -g (--subscriptionGroup)")
			}
			refs, err := target.resolve(ctx, r, true)
			if err != nil {
				return nil, err
			}
			ci, err := r.c.ClusterInfo(ctx)
			if err != nil {
				return nil, err
			}
			md := metadataFile{TopicConfigTable: map[string]*protocol.TopicConfig{},
				SubscriptionGroupTable: map[string]*protocol.SubscriptionGroupConfig{}, ExportTime: time.Now().UnixMilli()}
			for _, ref := range refs {
				if !groupsOnly {
					w, err := r.c.TopicConfigs(ctx, ref.addr)
					if err != nil {
						return nil, err
					}
					for name, tc := range w.TopicConfigTable {
						if tc == nil || !userTopic(name, special, ci) {
							continue
						}
						// As RocketMQ's: a topic on several masters is exported with their queues summed.
						if prev := md.TopicConfigTable[name]; prev != nil {
							tc.ReadQueueNums += prev.ReadQueueNums
							tc.WriteQueueNums += prev.WriteQueueNums
						}
						md.TopicConfigTable[name] = tc
					}
				}
				if !topicsOnly {
					groups, err := r.c.SubscriptionGroups(ctx, ref.addr)
					if err != nil {
						return nil, err
					}
					for name, g := range groups {
						if g == nil || !userGroup(name) {
							continue
						}
						if prev := md.SubscriptionGroupTable[name]; prev != nil {
							g.RetryQueueNums += prev.RetryQueueNums
						}
						md.SubscriptionGroupTable[name] = g
					}
				}
			}
			name := "metadata.json"
			switch {
			case topicsOnly:
				name, md.SubscriptionGroupTable = "topic.json", nil
			case groupsOnly:
				name, md.TopicConfigTable = "subscriptionGroup.json", nil
			}
			path, err := writeJSONFile(dir, name, md)
			if err != nil {
				return nil, err
			}
			return &exportResult{Path: path, Topics: len(md.TopicConfigTable), Groups: len(md.SubscriptionGroupTable)}, nil
		}
	}}
}

// exportedBrokerKeys are the broker config keys exportConfigs keeps (RocketMQ's needBrokerProprties).
var exportedBrokerKeys = []string{"brokerClusterName", "brokerId", "brokerName", "brokerRole", "fileReservedTime",
	"filterServerNums", "flushDiskType", "maxMessageSize", "messageDelayLevel", "msgTraceTopicName", "slaveReadEnable",
	"traceOn", "traceTopicEnable", "useTLS", "autoCreateTopicEnable", "autoCreateSubscriptionGroup"}

type configsFile struct {
	BrokerConfigs map[string]map[string]string `json:"brokerConfigs"`
	ClusterScale  map[string]int               `json:"clusterScale"`
}

func exportConfigsCmd() *command {
	return &command{name: "exportConfigs", desc: "Export configs.", setup: func(f *flags) runFunc {
		var cluster string
		dir := defaultExportPath
		f.String(&cluster, "c", "clusterName", "choose a cluster to export", true)
		f.String(&dir, "f", "filePath", "export configs.json path", false)
		return func(ctx context.Context, r *runner) (result, error) {
			refs, err := r.targets(ctx, "", cluster, false)
			if err != nil {
				return nil, err
			}
			out := configsFile{BrokerConfigs: map[string]map[string]string{},
				ClusterScale: map[string]int{"namesrvSize": len(r.c.Namesrvs())}}
			for _, ref := range refs {
				if ref.id != protocol.MasterID {
					out.ClusterScale["slaveBrokerSize"]++
					continue
				}
				out.ClusterScale["masterBrokerSize"]++
				body, err := r.brokerConfig(ctx, ref.addr)
				if err != nil {
					return nil, err
				}
				kept := map[string]string{}
				for _, k := range exportedBrokerKeys {
					if v, ok := body[k]; ok {
						kept[k] = v
					}
				}
				out.BrokerConfigs[ref.name] = kept
			}
			path, err := writeJSONFile(dir, "configs.json", out)
			if err != nil {
				return nil, err
			}
			return &exportResult{Path: path}, nil
		}
	}}
}

type importResult struct {
	Brokers []string `json:"brokers"`
	Topics  int      `json:"topics"`
	Groups  int      `json:"groups"`
}

func (r *importResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, a := range r.Brokers {
		t.printf("import %d topics and %d subscription groups to %s success.\n", r.Topics, r.Groups, a)
	}
	return t.err
}

func importMetadataCmd() *command {
	return &command{name: "importMetadata", desc: "Import the topics and subscription groups of an exportMetadata file (migration).",
		setup: func(f *flags) runFunc {
			var file string
			target := chooseBrokers(f, "import to which broker (queues as in the file)",
				"import to which cluster (each master gets the file's queues divided among them, rounded up)")
			f.String(&file, "f", "filePath", "metadata.json, topic.json or subscriptionGroup.json written by exportMetadata", true)
			return func(ctx context.Context, r *runner) (result, error) {
				data, err := os.ReadFile(file)
				if err != nil {
					return nil, usagef("option -f (--filePath): %v", err)
				}
				var md metadataFile
				if err := json.Unmarshal(data, &md); err != nil {
					return nil, usagef("option -f (--filePath): %s is not an exportMetadata file: %v", file, err)
				}
				if len(md.TopicConfigTable) == 0 && len(md.SubscriptionGroupTable) == 0 {
					return nil, usagef("option -f (--filePath): %s holds no topicConfigTable and no subscriptionGroupTable", file)
				}
				refs, err := target.resolve(ctx, r, true)
				if err != nil {
					return nil, err
				}
				split := func(n int32) int32 {
					if target.cluster == "" {
						return n
					}
					return max((n+int32(len(refs))-1)/int32(len(refs)), 1)
				}
				res := &importResult{Topics: len(md.TopicConfigTable), Groups: len(md.SubscriptionGroupTable)}
				res.Brokers, err = eachBroker(refs, func(ref brokerRef) error {
					var errs []error
					for name, tc := range md.TopicConfigTable {
						t := *tc
						t.TopicName = name
						t.ReadQueueNums, t.WriteQueueNums = split(t.ReadQueueNums), split(t.WriteQueueNums)
						if err := r.c.CreateTopicAttributes(ctx, ref.addr, &t, attributesText(t.Attributes)); err != nil {
							errs = append(errs, fmt.Errorf("topic %s: %w", name, err))
						}
					}
					for name, g := range md.SubscriptionGroupTable {
						gc := *g
						gc.GroupName = name
						gc.RetryQueueNums = split(gc.RetryQueueNums)
						if err := r.c.UpdateSubscriptionGroup(ctx, ref.addr, &gc); err != nil {
							errs = append(errs, fmt.Errorf("subscription group %s: %w", name, err))
						}
					}
					return errors.Join(errs...)
				})
				return res, err
			}
		}}
}

// attributesText is a topic's attributes as UPDATE_AND_CREATE_TOPIC's "+key=value" modification.
func attributesText(attrs map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(attrs) {
		parts = append(parts, "+"+k+"="+attrs[k])
	}
	return strings.Join(parts, ",")
}

// brokerConfig is GET_BROKER_CONFIG at addr, as key/value pairs.
func (r *runner) brokerConfig(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := r.c.Call(ctx, addr, remoting.GetBrokerConfig, nil, nil)
	if err != nil {
		return nil, err
	}
	return parseProperties(resp.Body), nil
}
