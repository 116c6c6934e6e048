// Command brokerprobe measures how long a broker takes to serve (scripts/bench-scale.sh, the recovery row):
// from --since (the moment the script started the broker) until the broker at --addr has answered both a
// send and a pull of what it sent:
//
//	send  SEND_MESSAGE_V2 of one small message to queue --queue of --topic, answered SUCCESS
//	pull  PULL_MESSAGE of that queue from the offset the send answered, answered SUCCESS (found); long
//	      polling (suspend 1 s) covers the moment dispatch takes to reach the new message
//
// Each is retried every --every until --timeout passes (a broker still recovering refuses connections). It
// prints the seconds from --since to the first answered send and to the answered pull (--json: one object),
// and exits 1 when the broker did not serve within --timeout.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// result is what brokerprobe prints.
type result struct {
	Addr      string  `json:"addr"`
	SendOKSec float64 `json:"send_ok_sec"` // --since to the first send answered SUCCESS
	ServeSec  float64 `json:"serving_sec"` // --since to the pull of that message answered SUCCESS
	Attempts  int     `json:"attempts"`    // requests made (sends and pulls)
	LastError string  `json:"last_error,omitempty"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(argv []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("brokerprobe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:10911", "broker host:port")
	brokerName := fs.String("broker", "broker-a", "the broker's brokerName")
	topic := fs.String("topic", "ProbeTopic", "topic to send to (it must exist, or autoCreateTopicEnable be on)")
	queue := fs.Int("queue", 0, "queue id")
	since := fs.Int64("since", 0, "start of the measurement, Unix nanoseconds (0: now)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	every := fs.Duration("every", 20*time.Millisecond, "pause between attempts")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	start := time.Now()
	if *since > 0 {
		start = time.Unix(0, *since)
	}
	r := probe(*addr, *brokerName, *topic, int32(*queue), start, *timeout, *every)
	if *asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintf(stdout, "broker %s: send answered after %.3f s, serving (send and pull) after %.3f s, %d requests\n",
			r.Addr, r.SendOKSec, r.ServeSec, r.Attempts)
	}
	if r.ServeSec == 0 {
		fmt.Fprintf(stderr, "brokerprobe: %s did not serve within %v: %s\n", *addr, *timeout, r.LastError)
		return 1
	}
	return 0
}

// probe retries a send, then a pull of what it sent, until both are answered SUCCESS or timeout passes
// (counted from start); ServeSec stays 0 when they were not.
func probe(addr, brokerName, topic string, queue int32, start time.Time, timeout, every time.Duration) *result {
	c := client.New(client.Config{Timeout: time.Second})
	defer c.Close()
	r := &result{Addr: addr}
	deadline := start.Add(timeout)
	call := func(req *remoting.Command) (*remoting.Command, error) {
		r.Attempts++
		d := time.Now().Add(5 * time.Second)
		if deadline.Before(d) {
			d = deadline
		}
		ctx, cancel := context.WithDeadline(context.Background(), d)
		defer cancel()
		resp, err := c.Invoke(ctx, addr, req)
		if err == nil {
			err = client.AnswerError(remoting.RequestCode(req.Code), addr, resp)
		}
		return resp, err
	}
	offset := int64(-1)
	for time.Now().Before(deadline) {
		var err error
		if offset < 0 {
			var resp *remoting.Command
			now := time.Now()
			resp, err = call(c.SendCommand(&client.Send{Group: "brokerprobe", Topic: topic, BrokerName: brokerName,
				QueueID: queue, Born: now, Body: []byte("probe"), Properties: message.EncodeProperties(
					map[string]string{message.PropertyUniqKey: "probe" + strconv.FormatInt(now.UnixNano(), 10)})}))
			if err == nil {
				if offset, err = strconv.ParseInt(resp.ExtFields["queueOffset"], 10, 64); err != nil {
					offset = -1
				} else {
					r.SendOKSec = time.Since(start).Seconds()
					continue
				}
			}
		} else {
			_, err = call(c.PullCommand(&client.Pull{Group: "brokerprobe", Topic: topic, BrokerName: brokerName,
				QueueID: queue, Offset: offset, MaxNums: 1, LongPoll: true, Suspend: time.Second, CommitOffset: offset}))
			if err == nil {
				r.ServeSec = time.Since(start).Seconds()
				return r
			}
		}
		r.LastError = err.Error()
		time.Sleep(every) // retry pacing of a polling loop bounded by deadline
	}
	return r
}
