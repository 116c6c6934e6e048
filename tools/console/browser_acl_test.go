package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/tools/admin"
)

// signedSend sends one message to topic signed with creds, as a client of that account would.
func signedSend(t *testing.T, c *cluster.Cluster, creds remoting.Credentials, topic string) error {
	t.Helper()
	cl := admin.NewClient(c.NamesrvAddrs(), 5*time.Second, creds, cluster.TestLogger(t, slog.LevelWarn))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	route, err := cl.Route(ctx, topic)
	if err != nil {
		return err
	}
	qs := client.RouteQueues(route, topic, "", true)
	if len(qs) == 0 {
		t.Fatalf("topic %s has no writable queue", topic)
	}
	_, err = cl.SendMessage(ctx, qs[0].Addr, &client.Send{Group: "AclPageProducer", Topic: topic, BrokerName: qs[0].BrokerName,
		QueueID: qs[0].QueueID, Properties: message.EncodeProperties(map[string]string{message.PropertyUniqKey: client.NewUniqID()}),
		Body: []byte("signed")})
	return err
}

// TestBrowserACLAccounts: the ACL page reads the brokers' ACL file with the person's admin account (without
// one it asks for it), never shows a secret key, and creates, updates and deletes an account whose effect a
// client signed with it sees: refused before, sending after the creation, refused on the topic once the
// update denies it, refused after the deletion. The global white addresses are set from the page too.
func TestBrowserACLAccounts(t *testing.T) {
	t.Parallel() // each has its own cluster and tab; most of their time is waiting on pages
	c := startACLCluster(t)
	adminCreds := remoting.Credentials{AccessKey: "rocketmqAdmin", SecretKey: "adminSecret123"}
	user := remoting.Credentials{AccessKey: "pageUser", SecretKey: "pageSecret123"}
	const topic = "AclPageTopic"
	cl := admin.NewClient(c.NamesrvAddrs(), 5*time.Second, adminCreds, cluster.TestLogger(t, slog.LevelWarn))
	t.Cleanup(func() { _ = cl.Close() })
	ensureTopic(t, c, cl, topic)
	if err := signedSend(t, c, user, topic); err == nil {
		t.Fatal("an unknown account could send")
	}

	srv := startConsole(t, c, remoting.Credentials{AccessKey: "rocketmqReader", SecretKey: "readerSecret12"})
	b := newBrowser(t, srv.Addr())
	b.confirmAll()
	b.open("#/acl")
	b.waitJS("the page asking for an admin account", `(document.querySelector('#acl-list .notice.error')||{}).textContent?.includes('needs an admin account')`)

	b.setAccount("rocketmqAdmin", "adminSecret123")
	b.open("#/cluster") // a navigation to the same hash would not render the page again
	b.open("#/acl")
	row := func(ak string) string { return fmt.Sprintf(`#acl-list tr[data-ak=%q]`, ak) }
	b.waitJS("the file's two accounts", fmt.Sprintf(`!!document.querySelector('%s') && !!document.querySelector('%s')`, row("rocketmqAdmin"), row("rocketmqReader")))
	if got := b.text(row("rocketmqReader")); !strings.Contains(got, "SUB") {
		t.Fatalf("reader row: %q", got)
	}
	if page := run(b, "page text", chromedp.Evaluate[string](`document.body.innerText`)); strings.Contains(page, "adminSecret123") || strings.Contains(page, "readerSecret12") {
		t.Fatalf("a secret key is on the page:\n%s", page)
	}

	// Create: the account may publish.
	b.do("create an account",
		chromedp.WaitVisible(chromedp.CSS(`#create-account-form`)),
		chromedp.SetValue(chromedp.CSS(`#create-account-form input[name=accessKey]`), user.AccessKey),
		chromedp.SetValue(chromedp.CSS(`#create-account-form input[name=secretKey]`), string(user.SecretKey)),
		chromedp.SetValue(chromedp.CSS(`#create-account-form select[name=defaultTopicPerm]`), "PUB"),
		chromedp.Click(chromedp.CSS(`#create-account-form button[type=submit]`)))
	b.waitJS("the creation's notice", `!!document.querySelector('#create-account-form .notice.ok')`)
	b.waitJS("the new account listed", `!!document.querySelector('`+row(user.AccessKey)+`')`)
	if err := signedSend(t, c, user, topic); err != nil {
		t.Fatalf("send as the new account: %v", err)
	}
	b.screenshot("acl")

	// Update: the topic is denied to it.
	b.do("edit the account", chromedp.Click(chromedp.CSS(row(user.AccessKey)+` button.account-edit`)),
		chromedp.WaitVisible(chromedp.CSS(`#update-account-form`)),
		chromedp.SetValue(chromedp.CSS(`#update-account-form input[name=topicPerms]`), topic+"=DENY"),
		chromedp.Click(chromedp.CSS(`#update-account-form button[type=submit]`)))
	b.waitJS("the topic denied on the page", `(document.querySelector('`+row(user.AccessKey)+`')||{}).textContent?.includes('`+topic+`=DENY')`)
	if err := signedSend(t, c, user, topic); !client.HasCode(err, remoting.NoPermission) {
		t.Fatalf("send after the update: %v, want NO_PERMISSION", err)
	}

	// Delete: refused again.
	b.do("delete the account", chromedp.Click(chromedp.CSS(row(user.AccessKey)+` button.account-delete`)))
	b.waitJS("the deletion's notice", `!!document.querySelector('#acl-delete-result .notice.ok')`)
	b.waitJS("the account gone", `!!document.querySelector('`+row("rocketmqAdmin")+`') && !document.querySelector('`+row(user.AccessKey)+`')`)
	if err := signedSend(t, c, user, topic); err == nil {
		t.Fatal("a deleted account could send")
	}

	// The global white addresses.
	b.do("set the global white addresses",
		chromedp.SetValue(chromedp.CSS(`#white-addrs-form input[name=addrs]`), "10.1.1.*, 10.2.2.2"),
		chromedp.Click(chromedp.CSS(`#white-addrs-form button[type=submit]`)))
	b.waitJS("the addresses listed", `(document.querySelector('#acl-list .white-addrs')||{}).textContent === '10.1.1.*, 10.2.2.2'`)
}
