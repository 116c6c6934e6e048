package remoting

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"hash"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// goClientSign is the official Go client's ACLInterceptor (internal/remote/interceptor.go, which cannot be
// imported), step for step: the key list is AccessKey plus every header key, sorted; the content is the
// values in that order; the signature covers content then body. It returns the header fields it would send.
func goClientSign(ext map[string]string, body []byte, ak, sk string) map[string]string {
	m := map[string]string{"AccessKey": ak}
	order := []string{"AccessKey"}
	out := map[string]string{}
	for k, v := range ext {
		m[k] = v
		order = append(order, k)
		out[k] = v
	}
	sort.Slice(order, func(i, j int) bool { return strings.Compare(order[i], order[j]) < 0 })
	content := ""
	for _, k := range order {
		content += m[k]
	}
	buf := append([]byte(content), body...)
	mac := hmac.New(func() hash.Hash { return sha1.New() }, []byte(sk))
	mac.Write(buf)
	out["Signature"] = base64.StdEncoding.EncodeToString(mac.Sum(nil))
	out["AccessKey"] = ak
	return out
}

func TestSignRequestMatchesOfficialGoClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		ext  map[string]string
		body []byte
	}{
		{"no header, no body", nil, nil},
		{"route request", map[string]string{"topic": "TopicTest"}, nil},
		{"send", map[string]string{"a": "PG", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "3", "i": "KEYS\x01k1\x02",
			"zz": "", "A": "upper"}, []byte("hello world")},
		{"heartbeat", map[string]string{}, []byte(`{"clientID":"10.0.0.1@1","producerDataSet":[{"groupName":"PG"}]}`)},
		{"utf-8", map[string]string{"key": "clé", "Key": "値"}, []byte{0, 1, 2, 0xff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ext map[string]string
			if tc.ext != nil {
				ext = map[string]string{}
				for k, v := range tc.ext {
					ext[k] = v
				}
			}
			cmd := NewRequest(UpdateAndCreateTopic, ext, tc.body)
			SignRequest(cmd, "rocketmq2", "12345678")
			want := goClientSign(tc.ext, tc.body, "rocketmq2", "12345678")
			if len(cmd.ExtFields) != len(want) {
				t.Fatalf("header fields %v, the Go client sends %v", cmd.ExtFields, want)
			}
			for k, v := range want {
				if cmd.ExtFields[k] != v {
					t.Fatalf("%s = %q, the Go client sends %q", k, cmd.ExtFields[k], v)
				}
			}
		})
	}
}

// The expected values were computed with openssl:
// printf 'rocketmq2TopicAhello' | openssl dgst -sha1 -hmac 12345678 -binary | base64
func TestSignatureKnownValues(t *testing.T) {
	cmd := NewRequest(GetRouteInfoByTopic, map[string]string{"topic": "TopicA"}, []byte("hello"))
	SignRequest(cmd, "rocketmq2", "12345678")
	if got, want := cmd.ExtFields[ExtSignature], "CLWlAOdV2SOUQYi+6SjfwmrW+O0="; got != want {
		t.Fatalf("Signature %q, want %q", got, want)
	}
	cmd = NewRequest(GetBrokerClusterInfo, nil, nil)
	SignRequest(cmd, "rocketmq2", "12345678")
	if got, want := cmd.ExtFields[ExtSignature], "Ou1T58RIcyZWaTIwzkhJZWn/Zvs="; got != want {
		t.Fatalf("Signature %q, want %q", got, want)
	}
	// Signing twice (a retried request) gives the same fields.
	SignRequest(cmd, "rocketmq2", "12345678")
	if got := cmd.ExtFields[ExtSignature]; got != "Ou1T58RIcyZWaTIwzkhJZWn/Zvs=" || len(cmd.ExtFields) != 2 {
		t.Fatalf("re-signed request %v", cmd.ExtFields)
	}
}

func TestVerifySignature(t *testing.T) {
	secrets := map[string]string{"rocketmq2": "12345678", "other": "secret-2"}
	lookup := func(ak string) (string, bool) { sk, ok := secrets[ak]; return sk, ok }
	signed := func(ext map[string]string, body []byte) *Command {
		cmd := NewRequest(SendMessage, ext, body)
		SignRequest(cmd, "rocketmq2", "12345678")
		return cmd
	}
	for _, tc := range []struct {
		name string
		cmd  func() *Command
		want error
	}{
		{"signed", func() *Command { return signed(map[string]string{"topic": "T"}, []byte("b")) }, nil},
		{"signed by the Go client", func() *Command {
			ext := goClientSign(map[string]string{"topic": "T", "queueId": "1"}, []byte("body"), "rocketmq2", "12345678")
			return &Command{Code: int32(SendMessage), Version: CurrentVersion, ExtFields: ext, Body: []byte("body")}
		}, nil},
		{"no credentials", func() *Command { return NewRequest(SendMessage, map[string]string{"topic": "T"}, nil) }, ErrNoCredentials},
		{"no signature", func() *Command {
			return NewRequest(SendMessage, map[string]string{"topic": "T", ExtAccessKey: "rocketmq2"}, nil)
		}, ErrNoCredentials},
		{"unknown account", func() *Command {
			cmd := NewRequest(SendMessage, map[string]string{"topic": "T"}, nil)
			SignRequest(cmd, "nobody", "12345678")
			return cmd
		}, ErrUnknownAccessKey},
		{"wrong secret", func() *Command {
			cmd := NewRequest(SendMessage, map[string]string{"topic": "T"}, nil)
			SignRequest(cmd, "other", "12345678")
			return cmd
		}, ErrBadSignature},
		{"body changed", func() *Command {
			cmd := signed(map[string]string{"topic": "T"}, []byte("b"))
			cmd.Body = []byte("c")
			return cmd
		}, ErrBadSignature},
		{"header changed", func() *Command {
			cmd := signed(map[string]string{"topic": "T"}, nil)
			cmd.ExtFields["topic"] = "U"
			return cmd
		}, ErrBadSignature},
		{"header added", func() *Command {
			cmd := signed(map[string]string{"topic": "T"}, nil)
			cmd.ExtFields["perm"] = "6"
			return cmd
		}, ErrBadSignature},
		{"Go client's unsigned security token", func() *Command {
			cmd := signed(map[string]string{"topic": "T"}, nil)
			cmd.ExtFields[ExtSecurityToken] = "token"
			return cmd
		}, nil},
		{"Java client's signed security token", func() *Command {
			return signed(map[string]string{"topic": "T", ExtSecurityToken: "token"}, nil)
		}, nil},
		{"unique-key flag added after signing (old clients)", func() *Command {
			cmd := signed(map[string]string{"topic": "T"}, nil)
			cmd.ExtFields[extUniqueKeyQuery] = "true"
			return cmd
		}, nil},
		{"unique-key flag added after signing (V4_9_4 and newer)", func() *Command {
			cmd := NewRequest(QueryMessage, map[string]string{"topic": "T"}, nil)
			cmd.Version = 401
			SignRequest(cmd, "rocketmq2", "12345678")
			cmd.ExtFields[extUniqueKeyQuery] = "true"
			return cmd
		}, ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ak, err := VerifySignature(tc.cmd(), lookup)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("VerifySignature: %v, want %v", err, tc.want)
			}
			if err == nil && ak != "rocketmq2" {
				t.Fatalf("access key %q", ak)
			}
			if err != nil && (strings.Contains(err.Error(), "12345678") || strings.Contains(err.Error(), "secret-2")) {
				t.Fatalf("error names a secret: %v", err)
			}
		})
	}
}

// The official Go producer, given credentials, signs every request it sends (route requests to the name server,
// heartbeats and sends to the broker, bodies included); each one passes VerifySignature here. (Its admin API
// signs only some calls, so it is not used.)
func TestOfficialGoClientSignaturesVerify(t *testing.T) {
	rlog.SetLogLevel("error")
	lookup := func(ak string) (string, bool) { return "12345678", ak == "rocketmq2" }
	var (
		mu       sync.Mutex
		verified = map[RequestCode]int{}
		failures []string
	)
	check := func(req *Command) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := VerifySignature(req, lookup); err != nil {
			failures = append(failures, RequestCode(req.Code).String()+": "+err.Error())
			return
		}
		verified[RequestCode(req.Code)]++
	}
	pool := NewPool("acl", 2, 64)
	var addr string
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		s.Register(GetRouteInfoByTopic, pool, func(_ context.Context, _ *Conn, req *Command) *Command {
			check(req)
			resp := NewResponse(Success, "")
			resp.Body = []byte(`{"queueDatas":[{"brokerName":"b","readQueueNums":1,"writeQueueNums":1,"perm":6,"topicSysFlag":0}],` +
				`"brokerDatas":[{"cluster":"c","brokerName":"b","brokerAddrs":{"0":"` + addr + `"}}]}`)
			return resp
		})
		for _, code := range []RequestCode{SendMessage, SendMessageV2, HeartBeat} {
			s.Register(code, pool, func(_ context.Context, _ *Conn, req *Command) *Command {
				check(req)
				return NewResponse(Success, "").SetExt("msgId", "0A0000010000000000000000").
					SetExt("queueId", "0").SetExt("queueOffset", "0")
			})
		}
	})
	addr = s.Addr().String()
	creds := primitive.Credentials{AccessKey: "rocketmq2", SecretKey: "12345678"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{addr})),
		producer.WithCredentials(creds), producer.WithGroupName("PG_acl"), producer.WithRetry(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Shutdown() }()
	msg := primitive.NewMessage("TopicA", []byte("a body the signature covers")).WithTag("TagA").WithKeys([]string{"k1"})
	_, _ = p.SendSync(ctx, msg) // the answer above is not a full send result; the request is what counts

	mu.Lock()
	defer mu.Unlock()
	if len(failures) > 0 {
		t.Fatalf("requests of the official client fail verification: %v", failures)
	}
	for _, code := range []RequestCode{GetRouteInfoByTopic} {
		if verified[code] == 0 {
			t.Errorf("no verified %s request (verified: %v)", code, verified)
		}
	}
	if verified[SendMessage]+verified[SendMessageV2] == 0 {
		t.Errorf("no verified send request (verified: %v)", verified)
	}
}
