package admin

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/remoting"
)

// consumerProgress -s: the broker passes GET_CONSUMER_RUNNING_INFO to each consumer and the queues each
// reports holding show its address. A consumer made of our remoting client stands in for the official Go
// client, which fails to encode its report whenever one of its rates is NaN (an idle consumer).
func TestShowClientIP(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ns, addr := c.NamesrvAddr(), c.Broker(0).Addr()
	const topic, group, clientID = "TopicOwners", "GroupOwners", "10.9.8.7@fake"
	ok(t, "updateTopic", "-n", ns, "-b", addr, "-t", topic, "-r", "2", "-w", "2")
	c.WaitTopicRoute(topic)

	rc := remoting.NewClient(remoting.ClientConfig{}, cluster.TestLogger(t, 0))
	t.Cleanup(func() { _ = rc.Close() })
	asked := make(chan map[string]string, 4)
	rc.RegisterHandler(remoting.GetConsumerRunningInfo, func(req *remoting.Command) *remoting.Command {
		asked <- req.ExtFields
		resp := remoting.NewResponse(remoting.Success, "")
		resp.Body = []byte(`{"properties":{},"statusTable":{},"subscriptionSet":[],"mqTable":{` +
			`{"topic":"TopicOwners","brokerName":"broker-a","queueId":1}:{"commitOffset":0}}, "jstack":"" }`)
		return resp
	})
	call := func(code remoting.RequestCode, ext map[string]string, body string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(code, ext, []byte(body)))
		if err != nil || resp.Code != int32(remoting.Success) {
			t.Fatalf("%s: %v %v", code, resp, err)
		}
	}
	call(remoting.HeartBeat, nil, fmt.Sprintf(`{"clientID":%q,"producerDataSet":[],"consumerDataSet":[{"groupName":%q,`+
		`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",`+
		`"subscriptionDataSet":[{"topic":%q,"subString":"*","subVersion":1}],"unitMode":false}]}`, clientID, group, topic))
	for q := range 2 {
		call(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic,
			"queueId": fmt.Sprint(q), "commitOffset": "0"}, "")
	}

	var res consumerProgressResult
	okJSON(t, &res, "consumerProgress", "-n", ns, "-g", group, "-s", "true")
	if len(res.Queues) != 2 || res.Queues[0].ClientIP != "" || res.Queues[1].ClientIP != "10.9.8.7" {
		t.Fatalf("consumerProgress -s true: %+v", res.Queues)
	}
	if ext := <-asked; ext["clientId"] != clientID || ext["consumerGroup"] != group || ext["brokerName"] != "broker-a" {
		t.Fatalf("the broker passed on %v", ext)
	}
	out := ok(t, "consumerProgress", "-n", ns, "-g", group, "-s", "true")
	contains(t, out, "#Client IP", "10.9.8.7", "N/A")
}
