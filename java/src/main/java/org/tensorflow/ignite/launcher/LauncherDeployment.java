package org.tensorflow.ignite.launcher;

import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteState;
import org.apache.ignite.Ignition;
import org.apache.ignite.cluster.ClusterState;
import org.apache.ignite.services.ServiceConfiguration;

/**
 * Deploys the {@link TfJobService} supervisor as a cluster singleton from every
 * server node's start-up (idempotent: Ignite keeps one instance however many nodes
 * ask, and moves it when its node leaves).
 *
 * <p>Services cannot be deployed on an inactive cluster, so a persistent cluster
 * is waited for; this runs on its own daemon thread so the node's start-up and
 * status reporting never wait for it.
 *
 * <p>{@link #serviceConfiguration()} is the other way: the service as a static part
 * of the node's configuration, exactly what the XML fragment of
 * {@code ignite-tf module config} declares (for nodes configured in Java).
 */
public final class LauncherDeployment {
    private LauncherDeployment() {
    }

    public static Thread deployInBackground(Ignite ignite) {
        Thread t = new Thread(() -> deployWhenActive(ignite), "tf-ignite-launcher-deploy");
        t.setDaemon(true);
        t.start();
        return t;
    }

    static void deployWhenActive(Ignite ignite) {
        long delay = 100;
        while (Ignition.state(ignite.name()) == IgniteState.STARTED) {
            try {
                if (ignite.cluster().state() == ClusterState.ACTIVE) {
                    ignite.services().deployClusterSingleton(LauncherCaches.SERVICE_NAME, new TfJobService());
                    System.out.println("NodeLauncher: TF job launcher service deployed (cluster singleton "
                        + LauncherCaches.SERVICE_NAME + ")");
                    return;
                }
            }
            catch (RuntimeException e) {
                System.err.println("NodeLauncher: deploying the TF job launcher service failed, will retry: " + e);
            }
            try {
                Thread.sleep(delay); // waiting for activation / a topology change, bounded below
            }
            catch (InterruptedException e) {
                return;
            }
            delay = Math.min(delay * 2, 2000);
        }
    }

    /**
     * The launcher service as a static part of an {@code IgniteConfiguration}
     * ({@code cfg.setServiceConfiguration(...)}): one instance in the cluster, at most
     * one per node; Ignite deploys it when the cluster activates and moves it when its
     * node leaves. The Java twin of the XML fragment of {@code ignite-tf module config}.
     */
    public static ServiceConfiguration serviceConfiguration() {
        ServiceConfiguration svc = new ServiceConfiguration();
        svc.setName(LauncherCaches.SERVICE_NAME);
        svc.setMaxPerNodeCount(1);
        svc.setTotalCount(1);
        svc.setService(new TfJobService());
        return svc;
    }
}
