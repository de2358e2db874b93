package org.tensorflow.ignite.launcher;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;

import org.apache.ignite.DataRegionMetrics;
import org.apache.ignite.Ignite;
import org.apache.ignite.cluster.ClusterNode;
import org.apache.ignite.configuration.DataRegionConfiguration;
import org.apache.ignite.configuration.DataStorageConfiguration;
import org.apache.ignite.lang.IgniteCallable;
import org.apache.ignite.resources.IgniteInstanceResource;

/**
 * One server node's data regions and how full they are, for the client's capacity guard
 * ({@code tensorflow_ignite.capacity}): writing more than an in-memory region holds makes
 * Ignite stop the node (IgniteOutOfMemoryException is a critical failure).
 *
 * <p>Sizes come from the region's configuration (max size, page size, persistence) and from
 * {@link Ignite#dataRegionMetrics(String)}: {@code TotalAllocatedPages/Size} and
 * {@code TotalUsedPages/Size} (allocated pages minus the empty pages a write can reuse) are
 * counted whether or not the region enables metrics, so they need no configuration change.
 */
final class RegionReport implements IgniteCallable<ArrayList<HashMap<String, Object>>> {
    private static final long serialVersionUID = 1L;

    @IgniteInstanceResource
    private transient Ignite ignite;

    @Override public ArrayList<HashMap<String, Object>> call() {
        ArrayList<HashMap<String, Object>> out = new ArrayList<>();
        DataStorageConfiguration storage = ignite.configuration().getDataStorageConfiguration();
        if (storage == null)
            storage = new DataStorageConfiguration();
        int pageSize = storage.getPageSize() > 0 ? storage.getPageSize() : DataStorageConfiguration.DFLT_PAGE_SIZE;
        ClusterNode local = ignite.cluster().localNode();
        List<DataRegionConfiguration> regions = new ArrayList<>();
        DataRegionConfiguration dflt = storage.getDefaultDataRegionConfiguration();
        if (dflt == null)
            dflt = new DataRegionConfiguration();
        regions.add(dflt);
        if (storage.getDataRegionConfigurations() != null)
            regions.addAll(List.of(storage.getDataRegionConfigurations()));
        for (DataRegionConfiguration r : regions) {
            String name = r.getName() != null ? r.getName() : DataStorageConfiguration.DFLT_DATA_REG_DEFAULT_NAME;
            HashMap<String, Object> m = new HashMap<>();
            m.put("node", JobPlan.label(local));
            m.put("node_id", local.id().toString());
            m.put("region", name);
            m.put("default", r == dflt);
            m.put("persistence", r.isPersistenceEnabled());
            m.put("max_size", r.getMaxSize());
            m.put("initial_size", r.getInitialSize());
            m.put("page_size", (long)pageSize);
            m.put("eviction", r.getPageEvictionMode() != null ? r.getPageEvictionMode().name() : "DISABLED");
            DataRegionMetrics dm = ignite.dataRegionMetrics(name);
            if (dm != null) {
                m.put("allocated_pages", dm.getTotalAllocatedPages());
                m.put("used_pages", dm.getTotalUsedPages());
                m.put("allocated_size", dm.getTotalAllocatedSize());
                m.put("used_size", dm.getTotalUsedSize());
                m.put("physical_size", dm.getPhysicalMemorySize());
            }
            out.add(m);
        }
        return out;
    }
}
