package org.tensorflow.ignite.bench;

import java.math.BigDecimal;
import java.sql.Timestamp;
import java.util.Collection;
import java.util.Date;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.apache.ignite.binary.BinaryField;
import org.apache.ignite.binary.BinaryObject;
import org.apache.ignite.binary.BinaryType;

/**
 * Touches every field of every scanned value so that ScanBench does the work of a reader
 * that materializes tensors, and nothing the JIT could skip.
 *
 * <p>What is touched, and what each touch adds to {@link #bytes} (the payload a tensor
 * holding the value would take) and to {@link #checksum} (a wrapping long sum, doubles and floats by their bits;
 * printed, so nothing is dead code):
 * <ul>
 *   <li>binary object (user type): every field of its type's metadata is read through a
 *       cached {@link BinaryField} handle (one lookup per type, not per row) and touched
 *       recursively; a field absent from this object's schema reads as null;</li>
 *   <li>binary enum: its ordinal, 4 bytes;</li>
 *   <li>byte/short/int/long/float/double/char/boolean: the value is added to the checksum;
 *       1/2/4/8/4/8/2/1 bytes;</li>
 *   <li>primitive arrays: materialized (Ignite copies them out of the page), length times
 *       element width bytes, first and last element added to the checksum (no extra O(n)
 *       pass: a tensor reader copies arrays, it does not reduce them);</li>
 *   <li>String: decoded from UTF-8 by Ignite, {@code length()} bytes (exact for ASCII);</li>
 *   <li>UUID 16 bytes, Date/Time 8, Timestamp 12 (millis + nanos), BigDecimal its
 *       magnitude bytes + 4 (scale), each also folded into the checksum;</li>
 *   <li>Object[] and String[]/UUID[]/... arrays, collections, maps: every element (map keys
 *       and values) touched recursively.</li>
 * </ul>
 * Null values add nothing. Keys are touched the same way but counted apart (key bytes).
 */
final class ValueToucher {
    long bytes;
    /** Wrapping sum of integral values and of the raw bits of floating-point ones. */
    long checksum;

    private final Map<Integer, BinaryField[]> fieldsByType = new HashMap<>();

    void touch(Object v) {
        if (v == null)
            return;
        if (v instanceof BinaryObject) {
            BinaryObject bo = (BinaryObject)v;
            BinaryType type = bo.type();
            if (type.isEnum()) {
                checksum += bo.enumOrdinal();
                bytes += 4;
                return;
            }
            for (BinaryField f : fields(type))
                touch(f.value(bo));
        }
        else if (v instanceof byte[]) {
            byte[] a = (byte[])v;
            bytes += a.length;
            if (a.length > 0)
                checksum += a[0] + a[a.length - 1];
        }
        else if (v instanceof Number)
            number((Number)v);
        else if (v instanceof String) {
            int n = ((String)v).length();
            checksum += n;
            bytes += n;
        }
        else if (v instanceof Boolean) {
            checksum += ((Boolean)v) ? 1 : 0;
            bytes += 1;
        }
        else if (v instanceof Character) {
            checksum += (Character)v;
            bytes += 2;
        }
        else if (v instanceof UUID) {
            UUID u = (UUID)v;
            checksum += u.getMostSignificantBits() ^ u.getLeastSignificantBits();
            bytes += 16;
        }
        else if (v instanceof Timestamp) {
            Timestamp ts = (Timestamp)v;
            checksum += ts.getTime() + ts.getNanos();
            bytes += 12;
        }
        else if (v instanceof Date) { // java.util.Date, java.sql.Date and java.sql.Time
            checksum += ((Date)v).getTime();
            bytes += 8;
        }
        else if (v instanceof Object[]) {
            for (Object o : (Object[])v)
                touch(o);
        }
        else if (v instanceof Collection) {
            for (Object o : (Collection<?>)v)
                touch(o);
        }
        else if (v instanceof Map) {
            for (Map.Entry<?, ?> e : ((Map<?, ?>)v).entrySet()) {
                touch(e.getKey());
                touch(e.getValue());
            }
        }
        else if (v.getClass().isArray())
            primitiveArray(v);
        else if (v instanceof Enum) {
            checksum += ((Enum<?>)v).ordinal();
            bytes += 4;
        }
        else
            checksum += v.hashCode(); // a deserialized object of a class on our classpath
    }

    private void number(Number n) {
        if (n instanceof Integer) {
            checksum += n.intValue();
            bytes += 4;
        }
        else if (n instanceof Long) {
            checksum += n.longValue();
            bytes += 8;
        }
        else if (n instanceof Double) {
            checksum += Double.doubleToRawLongBits(n.doubleValue());
            bytes += 8;
        }
        else if (n instanceof Float) {
            checksum += Float.floatToRawIntBits(n.floatValue());
            bytes += 4;
        }
        else if (n instanceof Short) {
            checksum += n.shortValue();
            bytes += 2;
        }
        else if (n instanceof Byte) {
            checksum += n.byteValue();
            bytes += 1;
        }
        else if (n instanceof BigDecimal) {
            BigDecimal d = (BigDecimal)n;
            checksum += d.scale() + d.signum();
            bytes += d.unscaledValue().bitLength() / 8 + 1 + 4;
        }
        else {
            checksum += n.longValue();
            bytes += 8;
        }
    }

    private void primitiveArray(Object v) {
        if (v instanceof int[]) {
            int[] a = (int[])v;
            bytes += 4L * a.length;
            if (a.length > 0)
                checksum += a[0] + a[a.length - 1];
        }
        else if (v instanceof long[]) {
            long[] a = (long[])v;
            bytes += 8L * a.length;
            if (a.length > 0)
                checksum += a[0] + a[a.length - 1];
        }
        else if (v instanceof float[]) {
            float[] a = (float[])v;
            bytes += 4L * a.length;
            if (a.length > 0)
                checksum += Float.floatToRawIntBits(a[0]) + Float.floatToRawIntBits(a[a.length - 1]);
        }
        else if (v instanceof double[]) {
            double[] a = (double[])v;
            bytes += 8L * a.length;
            if (a.length > 0)
                checksum += Double.doubleToRawLongBits(a[0]) + Double.doubleToRawLongBits(a[a.length - 1]);
        }
        else if (v instanceof short[]) {
            short[] a = (short[])v;
            bytes += 2L * a.length;
            if (a.length > 0)
                checksum += a[0] + a[a.length - 1];
        }
        else if (v instanceof char[]) {
            char[] a = (char[])v;
            bytes += 2L * a.length;
            if (a.length > 0)
                checksum += a[0] + a[a.length - 1];
        }
        else if (v instanceof boolean[]) {
            boolean[] a = (boolean[])v;
            bytes += a.length;
            if (a.length > 0)
                checksum += (a[0] ? 1 : 0) + (a[a.length - 1] ? 1 : 0);
        }
        else
            checksum += v.hashCode();
    }

    /** The field handles of a type, looked up once per type id. */
    private BinaryField[] fields(BinaryType type) {
        int typeId = type.typeId();
        BinaryField[] handles = fieldsByType.get(typeId);
        if (handles == null) {
            handles = type.fieldNames().stream().map(type::field).toArray(BinaryField[]::new);
            fieldsByType.put(typeId, handles);
        }
        return handles;
    }
}
