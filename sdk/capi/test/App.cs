// App.cs: a desktop app's part of the xpromo story through the C# binding
// (sdk/capi/dotnet/XPromo.cs), P/Invoking the C ABI as a WinForms or WPF
// app calls xpromo.dll: the C# twin of app.c, with the same commands,
// environment and output, checked by the same driver.
//
//   App.exe publish | launch
using System;
using System.Threading;
using XPromo;

static class App
{
    static long clockOffsetMs;
    static int logLines;

    static long DeviceClock() =>
        DateTimeOffset.UtcNow.ToUnixTimeMilliseconds() + clockOffsetMs;

    static Agent Open(string env)
    {
        var config = Environment.GetEnvironmentVariable(env);
        if (config == null) throw new Exception(env + " is not set");
        var agent = new Agent(config);
        agent.SetClock(DeviceClock);
        agent.SetLogger((level, message) =>
        {
            Interlocked.Increment(ref logLines);
            Console.Error.WriteLine("app.cs: xpromo log " + level + ": " + message);
        }, -4);
        return agent;
    }

    static void Want(bool ok, string what)
    {
        if (!ok) throw new Exception(what);
    }

    static int Publish()
    {
        using (var agent = Open("XPROMO_CONFIG"))
        {
            var rendered = 0;
            var result = agent.Show("onboarding_complete", ad =>
            {
                Console.Error.WriteLine("app.cs: rendering the ad " + ad + "; the user clicks");
                rendered++;
                return Outcome.Clicked;
            });
            Want(rendered == 1, "the render callback was called " + rendered + " times");
            agent.Flush();
            Want(agent.QueueLength == 0, "the click report is still queued after a flush");
            Console.WriteLine(result);
        }
        return 0;
    }

    static int Launch()
    {
        if (Environment.GetEnvironmentVariable("XPROMO_OFFLINE_CONFIG") != null)
        {
            // The first launch, with the network down.
            using (var offline = Open("XPROMO_OFFLINE_CONFIG"))
            {
                var state = offline.ClaimInstall();
                Want(state.Contains("\"claimed\":true") && state.Contains("\"answered\":false"),
                    "offline, the claim is not made and waiting: " + state);
                try
                {
                    offline.Flush();
                    Want(false, "offline, Flush succeeded");
                }
                catch (XPromoException e) when (e.Status == Status.Network && e.Code == "network")
                {
                    Console.Error.WriteLine("app.cs: offline: " + e.Message);
                }
                Want(offline.QueueLength == 1, "offline, the install claim is not queued");
                Want(Volatile.Read(ref logLines) > 0, "offline, the SDK logged nothing through the callback");
            }
            using (var agent = Open("XPROMO_CONFIG"))
            {
                Want(agent.QueueLength == 1, "the queued install claim did not survive the restart");
            }
        }
        using (var agent = Open("XPROMO_CONFIG"))
        {
            agent.ClaimInstall();
            agent.Flush();
            Want(agent.Heartbeat(), "no chain to send a heartbeat for");
            agent.Flush();
            Want(agent.QueueLength == 0, "events are still queued after a flush");
            Console.WriteLine(agent.InstallState);
        }
        return 0;
    }

    static int Main(string[] args)
    {
        var offset = Environment.GetEnvironmentVariable("XPROMO_CLOCK_OFFSET_MS");
        if (offset != null) clockOffsetMs = long.Parse(offset);
        try
        {
            if (args.Length == 1 && args[0] == "publish") return Publish();
            if (args.Length == 1 && args[0] == "launch") return Launch();
        }
        catch (XPromoException e)
        {
            Console.Error.WriteLine("app.cs: " + e.Status + " " + e.Code + " (http " + e.HttpStatus + "): " + e.Message);
            return 1;
        }
        catch (Exception e)
        {
            Console.Error.WriteLine("app.cs: " + e.Message);
            return 1;
        }
        Console.Error.WriteLine("usage: App.exe publish | launch");
        return 2;
    }
}
