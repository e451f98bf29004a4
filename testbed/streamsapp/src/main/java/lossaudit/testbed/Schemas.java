package lossaudit.testbed;

import org.apache.avro.Schema;

/** The value schemas of the three inputs and of OUTPUT. The Go load generator uses the same input texts. */
final class Schemas {
    private Schemas() {}

    static final String ORDER_A = "{\"type\":\"record\",\"name\":\"OrderA\",\"namespace\":\"lossaudit.testbed\",\"fields\":["
            + "{\"name\":\"customerId\",\"type\":\"string\"},{\"name\":\"seq\",\"type\":\"long\"},{\"name\":\"ts\",\"type\":\"long\"},"
            + "{\"name\":\"amount\",\"type\":\"double\"},{\"name\":\"note\",\"type\":[\"null\",\"string\"],\"default\":null}]}";

    static final String PROFILE_B = "{\"type\":\"record\",\"name\":\"ProfileB\",\"namespace\":\"lossaudit.testbed\",\"fields\":["
            + "{\"name\":\"customerId\",\"type\":\"string\"},{\"name\":\"seq\",\"type\":\"long\"},{\"name\":\"ts\",\"type\":\"long\"},"
            + "{\"name\":\"address\",\"type\":{\"type\":\"record\",\"name\":\"Address\",\"fields\":["
            + "{\"name\":\"city\",\"type\":\"string\"},{\"name\":\"zip\",\"type\":\"string\"}]}}]}";

    static final String PAYMENT_C = "{\"type\":\"record\",\"name\":\"PaymentC\",\"namespace\":\"lossaudit.testbed\",\"fields\":["
            + "{\"name\":\"customerId\",\"type\":\"string\"},{\"name\":\"seq\",\"type\":\"long\"},{\"name\":\"ts\",\"type\":\"long\"},"
            + "{\"name\":\"status\",\"type\":\"string\"},{\"name\":\"meta\",\"type\":[\"null\",{\"type\":\"record\",\"name\":\"Meta\",\"fields\":["
            + "{\"name\":\"source\",\"type\":\"string\"}]}],\"default\":null}]}";

    static final Schema A = new Schema.Parser().parse(ORDER_A);
    static final Schema B = new Schema.Parser().parse(PROFILE_B);
    static final Schema C = new Schema.Parser().parse(PAYMENT_C);

    /** OUTPUT: the left- or inner-joined values, b and c nullable. */
    static final Schema JOINED = joined("Joined", ORDER_A);

    /** OUTPUT of the outer joins (JOIN_TYPE=outer): a, b and c all nullable. */
    static final Schema JOINED_OUTER = joined("JoinedOuter", "[\"null\"," + ORDER_A + "],\"default\":null");

    /** The joined record named name whose field a has the type (and default) aType. */
    private static Schema joined(String name, String aType) {
        return new Schema.Parser().parse(
                "{\"type\":\"record\",\"name\":\"" + name + "\",\"namespace\":\"lossaudit.testbed\",\"fields\":["
                + "{\"name\":\"customerId\",\"type\":\"string\"},"
                + "{\"name\":\"a\",\"type\":" + aType + "},"
                + "{\"name\":\"b\",\"type\":[\"null\"," + PROFILE_B + "],\"default\":null},"
                + "{\"name\":\"c\",\"type\":[\"null\"," + PAYMENT_C + "],\"default\":null}]}");
    }
}
