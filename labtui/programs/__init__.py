"""Programs labtui compiles on the hosts that run them: probes, labtui-runat, the test kernels."""
