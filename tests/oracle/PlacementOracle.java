import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import org.apache.kafka.admin.AdminUtils;
import org.apache.kafka.admin.BrokerMetadata;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;
import org.apache.kafka.metadata.placement.UsableBroker;

/**
 * Apache Kafka's own placement code answering many cases in one JVM (the oracle of tests/oracle).
 *
 * One case per line on stdin (UTF-8), tokens separated by single spaces:
 *
 *   A case seed fixedStartIndex startPartitionId nPartitions replicationFactor brokers
 *       AdminUtils.assignReplicasToBrokers, brokers in the given order; AdminUtils' own
 *       Random is reseeded with seed first (it is drawn from only when fixedStartIndex < 0).
 *   S case seed specs brokers
 *       StripedReplicaPlacer(new Random(seed)).place(spec, cluster) for each spec in turn
 *       (one placer, one Random); specs are startPartition/numPartitions/numReplicas, comma
 *       separated.
 *
 * brokers: "-" for none, else comma separated id[@rack][!] ("!": fenced; striped only).
 *
 * One answer line per case: "case OK topic|topic" where a topic is "p:b,b;p:b,b" (partition
 * ids from startPartitionId or startPartition on), or "case ERR ExceptionClass message".
 */
public class PlacementOracle {

    private record Broker(int id, Optional<String> rack, boolean fenced) { }

    private static List<Broker> brokers(String token) {
        List<Broker> out = new ArrayList<>();
        if (token.equals("-")) {
            return out;
        }
        for (String item : token.split(",")) {
            boolean fenced = item.endsWith("!");
            if (fenced) {
                item = item.substring(0, item.length() - 1);
            }
            int at = item.indexOf('@');
            if (at < 0) {
                out.add(new Broker(Integer.parseInt(item), Optional.empty(), fenced));
            } else {
                out.add(new Broker(Integer.parseInt(item.substring(0, at)), Optional.of(item.substring(at + 1)), fenced));
            }
        }
        return out;
    }

    private static String topic(Map<Integer, List<Integer>> assignment) {
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<Integer, List<Integer>> e : new TreeMap<>(assignment).entrySet()) {
            if (sb.length() > 0) {
                sb.append(';');
            }
            sb.append(e.getKey()).append(':');
            List<Integer> replicas = e.getValue();
            for (int i = 0; i < replicas.size(); i++) {
                if (i > 0) {
                    sb.append(',');
                }
                sb.append(replicas.get(i));
            }
        }
        return sb.toString();
    }

    private static String admin(String[] t, Random adminRandom) {
        adminRandom.setSeed(Long.parseLong(t[2]));
        int fixedStartIndex = Integer.parseInt(t[3]);
        int startPartitionId = Integer.parseInt(t[4]);
        int nPartitions = Integer.parseInt(t[5]);
        int replicationFactor = Integer.parseInt(t[6]);
        List<BrokerMetadata> metadata = new ArrayList<>();
        for (Broker b : brokers(t[7])) {
            metadata.add(new BrokerMetadata(b.id(), b.rack()));
        }
        return topic(AdminUtils.assignReplicasToBrokers(
            metadata, nPartitions, replicationFactor, fixedStartIndex, startPartitionId));
    }

    private static String striped(String[] t) {
        StripedReplicaPlacer placer = new StripedReplicaPlacer(new Random(Long.parseLong(t[2])));
        List<Broker> brokers = brokers(t[4]);
        ClusterDescriber cluster = new ClusterDescriber() {
            @Override
            public Iterator<UsableBroker> usableBrokers() {
                List<UsableBroker> usable = new ArrayList<>();
                for (Broker b : brokers) {
                    usable.add(new UsableBroker(b.id(), b.rack(), b.fenced()));
                }
                return usable.iterator();
            }

            @Override
            public Uuid defaultDir(int brokerId) {
                return Uuid.ZERO_UUID;
            }
        };
        List<String> topics = new ArrayList<>();
        for (String spec : t[3].split(",")) {
            String[] s = spec.split("/");
            int start = Integer.parseInt(s[0]);
            PlacementSpec placement = new PlacementSpec(start, Integer.parseInt(s[1]), Short.parseShort(s[2]));
            TopicAssignment assignment = placer.place(placement, cluster);
            Map<Integer, List<Integer>> byPartition = new TreeMap<>();
            int partition = start;
            for (PartitionAssignment p : assignment.assignments()) {
                byPartition.put(partition++, p.replicas());
            }
            topics.add(topic(byPartition));
        }
        return String.join("|", topics);
    }

    public static void main(String[] args) throws Exception {
        // AdminUtils draws from its own static Random; reseeding it per case makes its draws known
        Field field = AdminUtils.class.getDeclaredField("RAND");
        field.setAccessible(true);
        Random adminRandom = (Random) field.get(null);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] t = line.split(" ");
            String answer;
            try {
                answer = "OK " + (t[0].equals("A") ? admin(t, adminRandom) : striped(t));
            } catch (RuntimeException e) {
                answer = "ERR " + e.getClass().getSimpleName() + " " + e.getMessage();
            }
            out.println(t[1] + " " + answer);
        }
        out.flush();
    }
}
