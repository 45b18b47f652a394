package kspark.placement;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.Dependency;
import org.apache.spark.NarrowDependency;
import org.apache.spark.Partition;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import scala.collection.Iterator;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * kspark's placement shim: some of its parent's partitions ({@code parents[i]} is the
 * parent partition of partition {@code i}), each preferring the executors named for it
 * ({@code executor_<host>_<id>}; nulls skipped; none named: the parent's preference), so
 * that a task runs where its state is. Python's data sources and Spark's shuffles give no
 * such preference; kspark builds this class once per Spark version (see
 * kspark/_spark/located.py).
 */
public class LocatedRDD<T> extends RDD<T> {
    private final String[][] locations;

    public LocatedRDD(RDD<T> parent, int[] parents, String[][] locations) {
        super(parent.sparkContext(), dependencies(parent, parents), parent.elementClassTag());
        this.locations = locations;
    }

    private static <T> Seq<Dependency<?>> dependencies(RDD<T> parent, int[] parents) {
        List<Dependency<?>> one = new ArrayList<>();
        one.add(new Slice<>(parent, parents));
        return CollectionConverters.asScala(one).toList();
    }

    private Slice<T> slice() {
        @SuppressWarnings("unchecked")
        Slice<T> dependency = (Slice<T>) dependencies().head();
        return dependency;
    }

    @Override
    public Iterator<T> compute(Partition split, TaskContext context) {
        return slice().rdd().iterator(((SlicePartition) split).parent, context);
    }

    @Override
    public Partition[] getPartitions() {
        Slice<T> slice = slice();
        Partition[] all = slice.rdd().partitions();
        Partition[] out = new Partition[slice.parents.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = new SlicePartition(i, all[slice.parents[i]]);
        }
        return out;
    }

    @Override
    public Seq<String> getPreferredLocations(Partition split) {
        int i = split.index();
        List<String> here = new ArrayList<>();
        if (i < locations.length && locations[i] != null) {
            for (String location : locations[i]) {
                if (location != null) {
                    here.add(location);
                }
            }
        }
        if (here.isEmpty()) {
            return slice().rdd().preferredLocations(((SlicePartition) split).parent);
        }
        return CollectionConverters.asScala(here).toList();
    }

    /** Partition {@code i} of the shim depends on partition {@code parents[i]} only. */
    static final class Slice<T> extends NarrowDependency<T> {
        final int[] parents;

        Slice(RDD<T> rdd, int[] parents) {
            super(rdd);
            this.parents = parents;
        }

        @Override
        public Seq<Object> getParents(int partitionId) {
            List<Object> one = new ArrayList<>();
            one.add(parents[partitionId]);
            return CollectionConverters.asScala(one).toList();
        }
    }

    static final class SlicePartition implements Partition {
        final int index;
        final Partition parent;

        SlicePartition(int index, Partition parent) {
            this.index = index;
            this.parent = parent;
        }

        @Override
        public int index() {
            return index;
        }

        @Override
        public int hashCode() {
            return index;
        }

        @Override
        public boolean equals(Object other) {
            return this == other;
        }
    }
}
